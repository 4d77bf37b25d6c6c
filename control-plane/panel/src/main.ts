// The web panel: sign-in, then Domains, a domain's page and Settings → API keys. Preact + htm, bundled by esbuild
// (control-plane/src/areas/panel/bundle.ts); it calls the API with the browser session (docs/decisions.md).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Alert, html } from './html.js';
import { api, errorText, onUnauthorized, setCsrf } from './api.js';
import { link, navigate, onNavigate } from './router.js';
import { KeysPage } from './keys.js';
import { PasswordPage, SessionsPage } from './account.js';
import { DomainPage, DomainsPage } from './domains.js';

interface Session {
  user: { id: number; email: string; name: string };
  csrf_token: string;
}

function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Session) => void; notice: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      onSignedIn(await api<Session>('POST', '/auth/login', { email, password }));
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>Sign in</h1>
    ${notice && html`<p role="status" class="ok">${notice}</p>`}
    <form onSubmit=${submit} class="card" aria-label="Sign in">
      <${Alert} text=${error} />
      <label
        >Email
        <input
          type="email"
          name="email"
          autocomplete="username"
          required
          value=${email}
          onInput=${(e: Event) => setEmail((e.target as HTMLInputElement).value)}
      /></label>
      <label
        >Password
        <input
          type="password"
          name="password"
          autocomplete="current-password"
          required
          value=${password}
          onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)}
      /></label>
      <button type="submit" disabled=${busy}>Sign in</button>
    </form>
  </main>`;
}

const SETTINGS: [string, string][] = [
  ['api-keys', 'API keys'],
  ['sessions', 'Sessions'],
  ['password', 'Password'],
];

function Settings({ tab, onSignedOut }: { tab: string; onSignedOut: (notice: string) => void }) {
  return html`<div>
    <nav aria-label="Settings sections" class="tabs">
      ${SETTINGS.map(
        ([t, label]) =>
          html`<a href=${`/panel/settings/${t}`} onClick=${link} aria-current=${t === tab ? 'page' : undefined}
            >${label}</a
          >`,
      )}
    </nav>
    ${
      tab === 'sessions'
        ? html`<${SessionsPage} onSignedOut=${onSignedOut} />`
        : tab === 'password'
          ? html`<${PasswordPage} onSignedOut=${onSignedOut} />`
          : html`<${KeysPage} />`
    }
  </div>`;
}

/** The page of a /panel/… path, and its title. */
function route(path: string): { parts: string[]; title: string } {
  const parts = path
    .replace(/^\/panel\/?/, '')
    .split('/')
    .filter(Boolean)
    .map(decodeURIComponent);
  if (parts[0] === 'settings') return { parts, title: SETTINGS.find(([t]) => t === parts[1])?.[1] ?? 'API keys' };
  if (parts[0] === 'domains' && parts[1]) return { parts, title: parts[1] };
  return { parts, title: 'Domains' };
}

function Page({ path, onSignedOut }: { path: string; onSignedOut: (notice: string) => void }) {
  const { parts } = route(path);
  if (parts[0] === 'settings') return html`<${Settings} tab=${parts[1] ?? 'api-keys'} onSignedOut=${onSignedOut} />`;
  if (parts[0] === 'domains' && parts[1]) return html`<${DomainPage} name=${parts[1]} tab=${parts[2] ?? 'overview'} />`;
  return html`<${DomainsPage} />`;
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [path, setPath] = useState(location.pathname);
  const [notice, setNotice] = useState('');
  useEffect(() => onNavigate(() => setPath(location.pathname)), []);
  useEffect(() => {
    api<Session>('GET', '/auth/session').then(
      (s) => {
        setCsrf(s.csrf_token);
        setSession(s);
      },
      () => setSession(null),
    );
  }, []);
  useEffect(() => {
    document.title = `${route(path).title} · Panel`;
  }, [path]);
  useEffect(() => {
    if (!session) return;
    onUnauthorized(() => {
      setNotice('Your session has ended (signed out elsewhere or expired): sign in again.');
      setSession(null);
    });
    return () => onUnauthorized(null);
  }, [session]);
  if (session === undefined) return html`<p>Loading…</p>`;
  if (session === null)
    return html`<${SignIn}
      notice=${notice}
      onSignedIn=${(s: Session) => {
        setCsrf(s.csrf_token);
        setNotice('');
        setSession(s);
      }}
    />`;
  const signedOut = (text: string) => {
    setNotice(text);
    setSession(null);
    navigate('/panel/');
  };
  const signOut = async () => {
    try {
      await api('POST', '/auth/logout');
    } finally {
      setSession(null);
      navigate('/panel/');
    }
  };
  return html`<div>
    <a href="#main" class="skip">Skip to content</a>
    <header>
      <nav aria-label="Main">
        <a href="/panel/" onClick=${link} aria-current=${!path.includes('/settings') ? 'page' : undefined}>Domains</a>
        <a
          href="/panel/settings/api-keys"
          onClick=${link}
          aria-current=${path.includes('/settings') ? 'page' : undefined}
          >Settings</a
        >
      </nav>
      <span class="who">${session.user.email} <button type="button" onClick=${signOut}>Sign out</button></span>
    </header>
    <main id="main"><${Page} path=${path} onSignedOut=${signedOut} /></main>
  </div>`;
}

render(html`<${App} />`, document.getElementById('app')!);
