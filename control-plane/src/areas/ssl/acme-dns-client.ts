// The one acme-dns call the platform makes: POST {server}/update with X-Api-User / X-Api-Key and {subdomain, txt}, as
// acme-dns documents it. The server URL is tenant input: its host is resolved and the address connected to is judged
// by the SSRF policy (ALLOWED_PRIVATE_NETWORKS, the platform's own endpoints); one bounded deadline covers connect and
// answer, redirects are not followed and at most MAX_ANSWER_BYTES of the answer are read.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { randomBytes } from 'node:crypto';
import { isAddressRefused, resolveAllowed, type AddressPolicy } from '@platform/shared/address-policy';

export const ACME_DNS_LIMITS = {
  serverUrlLength: 2048,
  usernameLength: 64,
  passwordLength: 128,
  subdomainLength: 63,
  fulldomainLength: 253,
  /** Connect, TLS, request and answer together. */
  timeoutMs: 5_000,
  maxAnswerBytes: 4096,
} as const;

export interface AcmeDnsCredentials {
  serverUrl: string;
  username: string;
  password: string;
  subdomain: string;
}

export type AcmeDnsUpdateResult = { ok: true } | { ok: false; error: string };

/** Why `url` cannot be an acme-dns server URL, or undefined. Addresses are judged where the call connects. */
export function acmeDnsUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'server_url must be an absolute http:// or https:// URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'server_url must be an http:// or https:// URL';
  if (u.username !== '' || u.password !== '') return 'server_url must not carry a user name or password';
  if (u.hostname === '') return 'server_url must name a host';
  if (u.search !== '' || u.hash !== '') return 'server_url must not carry a query or fragment';
  return undefined;
}

/** A TXT value of the shape acme-dns accepts (43 characters, base64url like a dns-01 digest). */
export function testTxtValue(): string {
  return randomBytes(32).toString('base64url');
}

function updateUrl(serverUrl: string): URL {
  const u = new URL(serverUrl);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/update`;
  return u;
}

/** What acme-dns said, as a sentence for the user. */
function answerProblem(status: number, body: string): string {
  let reason = '';
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === 'string') reason = parsed.error.slice(0, 100).replace(/[^\x20-\x7e]/g, '?');
  } catch {
    // Not JSON: the status says enough.
  }
  if (status === 401 || status === 403)
    return `acme-dns refused the credentials (HTTP ${status}${reason ? `: ${reason}` : ''})`;
  return `acme-dns answered HTTP ${status}${reason ? ` (${reason})` : ''}`;
}

/**
 * Sets the TXT value of the account's subdomain through acme-dns /update. Never throws: every failure (refused
 * address, unreachable server, timeout, refused credentials) is a result with a sentence in `error`.
 */
export async function acmeDnsUpdate(
  policy: AddressPolicy,
  creds: AcmeDnsCredentials,
  txt: string,
  timeoutMs: number = ACME_DNS_LIMITS.timeoutMs,
): Promise<AcmeDnsUpdateResult> {
  let url: URL;
  try {
    url = updateUrl(creds.serverUrl);
  } catch {
    return { ok: false, error: 'server_url does not parse' };
  }
  const https = url.protocol === 'https:';
  const port = Number(url.port) || (https ? 443 : 80);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const deadline = AbortSignal.timeout(timeoutMs);
  let address: string;
  try {
    address = await Promise.race([
      resolveAllowed(policy, hostname, port),
      new Promise<never>((_, reject) =>
        deadline.addEventListener('abort', () => reject(new Error('name resolution timed out')), { once: true }),
      ),
    ]);
  } catch (err) {
    if (isAddressRefused(err))
      return {
        ok: false,
        error:
          `${err.message}: acme-dns servers must be public addresses ` +
          '(an operator may allow internal ranges with ALLOWED_PRIVATE_NETWORKS)',
      };
    return { ok: false, error: `${hostname} could not be resolved (${(err as Error).message})` };
  }
  const body = JSON.stringify({ subdomain: creds.subdomain, txt });
  return new Promise<AcmeDnsUpdateResult>((resolve) => {
    let settled = false;
    const done = (r: AcmeDnsUpdateResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(r);
    };
    const req = (https ? httpsRequest : httpRequest)({
      host: address,
      port,
      path: url.pathname,
      method: 'POST',
      headers: {
        host: url.host,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-api-user': creds.username,
        'x-api-key': creds.password,
      },
      agent: false,
      ...(https && isIP(hostname) === 0 ? { servername: hostname } : {}),
    });
    const timer = setTimeout(
      () => done({ ok: false, error: `acme-dns did not answer within ${timeoutMs / 1000} s` }),
      timeoutMs,
    );
    req.on('error', (err) => done({ ok: false, error: `acme-dns could not be reached (${err.message})` }));
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status === 200) done({ ok: true });
        else done({ ok: false, error: answerProblem(status, text) });
      };
      res.on('data', (chunk: Buffer) => {
        if (size >= ACME_DNS_LIMITS.maxAnswerBytes) return;
        chunks.push(chunk.subarray(0, ACME_DNS_LIMITS.maxAnswerBytes - size));
        size += chunk.length;
        // Enough read: judge now, drop the rest and the connection.
        if (size >= ACME_DNS_LIMITS.maxAnswerBytes) finish();
      });
      res.on('end', finish);
      res.on('error', () => finish());
    });
    req.end(body);
  });
}
