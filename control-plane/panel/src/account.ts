// Settings → Sessions (where the account is signed in; end one, or all but this browser) and Settings → Password
// (the current password, then the new one twice; every session ends and the browser signs in again).
import { useEffect, useState } from 'preact/hooks';
import { Alert, Head, html } from './html.js';
import { api, errorText } from './api.js';

interface Listed {
  id: number;
  current: boolean;
  user_agent: string;
  client_ip: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

/** A user agent in a few words: the browser and the system it names, else the string cut short. */
export function browserName(ua: string): string {
  const browser = /(Edg|Firefox|Chromium|Chrome|Safari|curl)\/[\d.]+/.exec(ua)?.[1];
  const system = /(Windows|Android|iPhone|iPad|Mac OS X|Linux|CrOS)/.exec(ua)?.[1];
  const names: Record<string, string> = { Edg: 'Edge', 'Mac OS X': 'macOS', CrOS: 'ChromeOS' };
  if (browser) return `${names[browser] ?? browser}${system ? ` on ${names[system] ?? system}` : ''}`;
  return ua ? (ua.length > 60 ? `${ua.slice(0, 57)}…` : ua) : 'Unknown browser';
}

const when = (iso: string) => new Date(iso).toLocaleString();

export function SessionsPage({ onSignedOut }: { onSignedOut: (notice: string) => void }) {
  const [sessions, setSessions] = useState<Listed[] | null>(null);
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const load = () =>
    api<{ sessions: Listed[] }>('GET', '/users/me/sessions').then(
      (a) => setSessions(a.sessions),
      (e) => setError(errorText(e)),
    );
  useEffect(() => void load(), []);
  const run = async (fn: () => Promise<string>) => {
    setError('');
    setStatus('');
    try {
      setStatus(await fn());
    } catch (e) {
      setError(errorText(e));
    }
    await load();
  };
  const end = (s: Listed) =>
    s.current
      ? api('DELETE', `/users/me/sessions/${s.id}`).then(
          () => onSignedOut('You ended this browser’s session.'),
          (e) => setError(errorText(e)),
        )
      : run(async () => {
          await api('DELETE', `/users/me/sessions/${s.id}`);
          return `The session of ${browserName(s.user_agent)} ended.`;
        });
  const others = sessions?.filter((s) => !s.current).length ?? 0;
  return html`<section aria-labelledby="sessions-title">
    <h2 id="sessions-title">Sessions</h2>
    <p>Where your account is signed in to the panel. A session lasts 7 days from its sign-in. API keys are apart.</p>
    <${Alert} text=${error} />
    <p role="status" class="ok">${status}</p>
    <table>
      <caption>
        Signed-in browsers, the most recently seen first
      </caption>
      <${Head} cols=${['Browser', 'Address', 'Signed in', 'Last seen', 'Expires', '']} />
      <tbody>
        ${sessions?.map(
          (s) =>
            html`<tr data-session-id=${s.id}>
              <td>${browserName(s.user_agent)} ${s.current && html`<strong class="badge">This browser</strong>`}</td>
              <td><code>${s.client_ip || '—'}</code></td>
              <td>${when(s.created_at)}</td>
              <td>${when(s.last_seen_at)}</td>
              <td>${when(s.expires_at)}</td>
              <td class="actions">
                <button
                  type="button"
                  class="danger"
                  aria-label=${s.current ? 'Sign out this browser' : `End the session of ${browserName(s.user_agent)}, ${s.client_ip}`}
                  onClick=${() => end(s)}
                >
                  ${s.current ? 'Sign out' : 'End session'}
                </button>
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
    <button
      type="button"
      class="danger"
      disabled=${others === 0}
      onClick=${() =>
        confirm('Sign out every other browser?') &&
        run(async () => (await api<{ message: string }>('POST', '/users/me/sessions/sign-out-others')).message)}
    >
      Sign out all other sessions
    </button>
  </section>`;
}

export function PasswordPage({ onSignedOut }: { onSignedOut: (notice: string) => void }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError('');
    if (next !== again) {
      setError('The new password and its repetition differ.');
      return;
    }
    setBusy(true);
    try {
      await api('PUT', '/users/me/password', { current_password: current, new_password: next });
      onSignedOut('Your password is changed and every session ended: sign in with the new password.');
    } catch (err) {
      setError(errorText(err));
      setBusy(false);
    }
  };
  const input = (name: string, label: string, value: string, set: (v: string) => void, auto: string) =>
    html`<label
      >${label}
      <input
        type="password"
        name=${name}
        autocomplete=${auto}
        required
        value=${value}
        onInput=${(e: Event) => set((e.target as HTMLInputElement).value)}
    /></label>`;
  return html`<section aria-labelledby="password-title">
    <h2 id="password-title">Password</h2>
    <form class="card stack" onSubmit=${submit} aria-labelledby="password-title">
      <p>
        At least 10 characters. Changing it ends every session of your account, this one too; API keys keep working.
      </p>
      <${Alert} text=${error} />
      ${input('current_password', 'Current password', current, setCurrent, 'current-password')}
      ${input('new_password', 'New password', next, setNext, 'new-password')}
      ${input('repeat_password', 'New password again', again, setAgain, 'new-password')}
      <button type="submit" disabled=${busy}>Change password</button>
    </form>
  </section>`;
}
