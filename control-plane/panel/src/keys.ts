// Settings → API keys: create (name, expiry, mode), the new key shown once with a copy button, the list with last
// use and status, revoke, the 10-key cap, and each key's requests per day over 30 days.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Head, html } from './html.js';
import { api, errorText } from './api.js';
import { BarChart } from './chart.js';

interface Key {
  id: number;
  name: string;
  prefix: string;
  mode: 'full' | 'read_only';
  status: 'active' | 'revoked' | 'expired';
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string;
}
interface KeyList {
  keys: Key[];
  active: number;
  max_active: number;
}

const when = (iso: string | null, none: string) => (iso ? new Date(iso).toLocaleString() : none);

function Usage({ id }: { id: number }) {
  const [days, setDays] = useState<{ day: string; requests: number }[] | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api<{ days: { day: string; requests: number }[] }>('GET', `/users/me/keys/${id}/usage`).then(
      (u) => setDays(u.days),
      (e) => setError(errorText(e)),
    );
  }, [id]);
  if (error) return html`<p role="alert" class="error">${error}</p>`;
  if (!days) return html`<p>Loading…</p>`;
  return html`<${BarChart}
    title="Requests per day, last 30 days"
    points=${days.map((d) => ({ label: d.day.slice(5), value: d.requests }))}
  />`;
}

function NewKey({ created, onDone }: { created: { key: string; name: string }; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.select(), []);
  const copy = async () => {
    input.current?.select();
    try {
      await navigator.clipboard.writeText(created.key);
    } catch {
      document.execCommand('copy');
    }
    setCopied(true);
  };
  return html`<section class="once" aria-labelledby="new-key-title">
    <h3 id="new-key-title">Your new key “${created.name}”</h3>
    <p><strong>Copy it now.</strong> It is shown once: only its hash is stored, so it cannot be shown again.</p>
    <div class="row">
      <label for="new-key" class="sr-only">New API key</label>
      <input id="new-key" ref=${input} readonly value=${created.key} size="72" data-testid="new-key" />
      <button type="button" onClick=${copy}>${copied ? 'Copied' : 'Copy'}</button>
    </div>
    <button type="button" onClick=${onDone}>I have copied it</button>
  </section>`;
}

export function KeysPage() {
  const [list, setList] = useState<KeyList | null>(null);
  const [error, setError] = useState('');
  const [created, setCreated] = useState<{ key: string; name: string } | null>(null);
  const [open, setOpen] = useState<number | null>(null);
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('never');
  const [mode, setMode] = useState('full');

  const load = () => api<KeyList>('GET', '/users/me/keys').then(setList, (e) => setError(errorText(e)));
  useEffect(() => void load(), []);

  const create = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      const k = await api<{ key: string; name: string }>('POST', '/users/me/keys', { name, expires, mode });
      setCreated(k);
      setName('');
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const revoke = async (k: Key) => {
    if (!confirm(`Revoke “${k.name}” (${k.prefix}…)? Requests with it are refused at once.`)) return;
    try {
      await api('DELETE', `/users/me/keys/${k.id}`);
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const atCap = list !== null && list.active >= list.max_active;

  return html`<section aria-labelledby="keys-title">
    <h2 id="keys-title">API keys</h2>
    <p>
      A key acts as your account on the API (<code>Authorization: Bearer svc_…</code>). An account may have
      ${list ? ` ${list.max_active} ` : ' 10 '} active keys${list ? ` (${list.active} now)` : ''}.
    </p>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    ${created && html`<${NewKey} created=${created} onDone=${() => setCreated(null)} />`}
    <form onSubmit=${create} class="card" aria-labelledby="create-key-title">
      <h3 id="create-key-title">Create a key</h3>
      ${
        atCap &&
        html`<p class="note" role="status">
          You have ${list!.max_active} active keys, the most an account may have. Revoke one to create another.
        </p>`
      }
      <label
        >Name
        <input
          name="name"
          required
          maxlength="100"
          value=${name}
          onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)}
      /></label>
      <label
        >Expires
        <select
          name="expires"
          value=${expires}
          onChange=${(e: Event) => setExpires((e.target as HTMLSelectElement).value)}
        >
          <option value="never">Never</option>
          <option value="30">In 30 days</option>
          <option value="90">In 90 days</option>
          <option value="365">In 365 days</option>
        </select></label
      >
      <fieldset>
        <legend>Access</legend>
        <label
          ><input type="radio" name="mode" value="full" checked=${mode === 'full'} onChange=${() => setMode('full')} />
          Full access</label
        >
        <label
          ><input
            type="radio"
            name="mode"
            value="read_only"
            checked=${mode === 'read_only'}
            onChange=${() => setMode('read_only')}
          />
          Read-only (GET, HEAD, OPTIONS and analytics queries)</label
        >
      </fieldset>
      <button type="submit" disabled=${atCap}>Create key</button>
    </form>
    <table>
      <caption>
        Your keys
      </caption>
      <${Head} cols=${['Name', 'Key', 'Access', 'Status', 'Expires', 'Last used', '']} />
      <tbody>
        ${list?.keys.map(
          (k) =>
            html`<tr data-key-id=${k.id}>
                <td>${k.name || '—'}</td>
                <td><code>${k.prefix}…</code></td>
                <td>${k.mode === 'full' ? 'Full' : 'Read-only'}</td>
                <td class=${`status-${k.status}`}>${k.status}</td>
                <td>${when(k.expires_at, 'Never')}</td>
                <td>${when(k.last_used_at, 'Never used')}</td>
                <td class="actions">
                  <button
                    type="button"
                    aria-expanded=${open === k.id}
                    onClick=${() => setOpen(open === k.id ? null : k.id)}
                  >
                    Usage
                  </button>
                  ${k.status === 'active' && html`<button type="button" class="danger" onClick=${() => revoke(k)}>Revoke</button>`}
                </td>
              </tr>
              ${
                open === k.id &&
                html`<tr>
                  <td colspan="7"><${Usage} id=${k.id} /></td>
                </tr>`
              }`,
        )}
      </tbody>
    </table>
  </section>`;
}
