// The panel's one way to the API: fetch with the session cookie and, on writes, the session's CSRF token; a failed
// answer throws an Error carrying the API's own `error` text.
let csrfToken = '';

export function setCsrf(token: string): void {
  csrfToken = token;
}

let unauthorized: (() => void) | null = null;

/** Called when the API answers 401 to a signed-in page (the session ended: signed out elsewhere, expired). */
export function onUnauthorized(fn: (() => void) | null): void {
  unauthorized = fn;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  let payload: string | undefined;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // text/plain answers (the zone export) stay text
  }
  if (!res.ok) {
    // A 401 of the password change is a wrong current password, not an ended session.
    if (res.status === 401 && unauthorized && path !== '/users/me/password') unauthorized();
    const message =
      parsed && typeof parsed === 'object' && 'error' in parsed ? String((parsed as { error: unknown }).error) : text;
    throw new ApiFailure(res.status, message || `${res.status} ${res.statusText}`);
  }
  return parsed as T;
}

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));
