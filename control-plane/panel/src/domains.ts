// Domains at a glance (state, SSL, plan, role; add a domain) and a domain's page: nameservers and check-ns, SSL,
// developer mode, cache purge, DNS records (list, add, edit, delete, BIND import with preview, export), rules per
// type (list, enable/disable, reorder, edit) and analytics charts.
import { useEffect, useState } from 'preact/hooks';
import { Alert, Head, html } from './html.js';
import { api, errorText } from './api.js';
import { link } from './router.js';
import { Rules } from './rules.js';
import { Analytics } from './analytics.js';

interface Domain {
  name: string;
  unicode_name: string;
  state: string;
  dns_mode: string;
  role: string;
  nameservers: string[];
  developer_mode: boolean;
  developer_mode_expires_at: string | null;
  ssl?: { status: string; expires_at: string | null };
  subscription?: { plan_name: string } | null;
}

const enc = encodeURIComponent;
const value = (e: Event) => (e.target as HTMLInputElement).value;

export function DomainsPage() {
  const [domains, setDomains] = useState<Domain[] | null>(null);
  const [error, setError] = useState('');
  const [name, setName] = useState('');
  const [mode, setMode] = useState('managed');
  const load = () => api<Domain[]>('GET', '/domains/').then(setDomains, (e) => setError(errorText(e)));
  useEffect(() => void load(), []);
  const add = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      await api('POST', '/domains/', { name, dns_mode: mode });
      setName('');
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return html`<section aria-labelledby="domains-title">
    <h2 id="domains-title">Domains</h2>
    <${Alert} text=${error} />
    <form class="card row" onSubmit=${add} aria-label="Add a domain">
      <label
        >Domain name
        <input
          name="domain"
          required
          value=${name}
          onInput=${(e: Event) => setName(value(e))}
          placeholder="example.org"
      /></label>
      <label
        >DNS
        <select value=${mode} onChange=${(e: Event) => setMode(value(e))}>
          <option value="managed">Managed here (set our nameservers)</option>
          <option value="external">External (CNAME setup)</option>
        </select></label
      >
      <button type="submit">Add domain</button>
    </form>
    <table>
      <caption>
        Your domains and the domains shared with you
      </caption>
      <${Head} cols=${['Domain', 'State', 'SSL', 'Plan', 'Role']} />
      <tbody>
        ${domains?.map(
          (d) =>
            html`<tr>
              <td><a href=${`/panel/domains/${enc(d.name)}`} onClick=${link}>${d.unicode_name}</a></td>
              <td>${d.state}</td>
              <td>${d.ssl?.status ?? '—'}</td>
              <td>${d.subscription?.plan_name ?? 'Free'}</td>
              <td>${d.role}</td>
            </tr>`,
        )}
        ${
          domains?.length === 0 &&
          html`<tr>
            <td colspan="5">No domains yet: add one above.</td>
          </tr>`
        }
      </tbody>
    </table>
  </section>`;
}

interface SslInfo {
  status: string;
  issuer: string | null;
  not_before: string | null;
  not_after: string | null;
  sans: string[];
  can_manual_issue: boolean;
  next_manual_issue_at: string | null;
  last_error: string | null;
  coverage: {
    hostname: string;
    state: string;
    attempts: number;
    last_error: string | null;
    next_retry_at: string | null;
  }[];
  coverage_total: number;
}
interface NsCheck {
  ok: boolean;
  state: string;
  nameservers: string[];
  error?: string;
}

const day = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString() : '—');

/** SSL status, the certificate served, the proxied hostnames it does not cover yet, and a manual issue. */
function Ssl({ domain }: { domain: Domain }) {
  const [ssl, setSsl] = useState<SslInfo | null>(null);
  const [error, setError] = useState('');
  const [msg, setMsg] = useState('');
  const base = `/domains/${enc(domain.name)}/ssl/`;
  const load = () => api<SslInfo>('GET', base).then(setSsl, (e) => setError(errorText(e)));
  useEffect(() => void load(), [domain.name]);
  const issue = async () => {
    setError('');
    try {
      setMsg((await api<{ message: string }>('POST', `${base}issue`)).message);
    } catch (e) {
      setError(errorText(e));
    }
    await load();
  };
  return html`<section class="card" aria-labelledby="ssl-title">
    <h3 id="ssl-title">SSL</h3>
    <${Alert} text=${error} />
    ${msg && html`<p role="status" class="ok">${msg}</p>`}
    ${
      ssl &&
      html`<p>
          Status: <strong class=${`ssl-${ssl.status}`}>${ssl.status}</strong>
          ${ssl.not_after && html` · ${ssl.issuer ?? 'certificate'}, valid ${day(ssl.not_before)} to ${day(ssl.not_after)}`}
        </p>
        ${ssl.sans.length > 0 && html`<p>Covers: ${ssl.sans.map((n) => html`<code>${n}</code> `)}</p>`}
        ${ssl.last_error && html`<p class="error">Last issuance failed: ${ssl.last_error}</p>`}
        ${
          ssl.coverage_total === 0
            ? html`<p>Coverage: every proxied hostname is covered.</p>`
            : html`<table>
                <caption>
                  Coverage: ${ssl.coverage_total} proxied hostname${ssl.coverage_total === 1 ? '' : 's'} not on a
                  certificate yet
                </caption>
                <${Head} cols=${['Hostname', 'State', 'Attempts', 'Next try', 'Last error']} />
                <tbody>
                  ${ssl.coverage.map(
                    (c) =>
                      html`<tr>
                        <td><code>${c.hostname}</code></td>
                        <td>${c.state}</td>
                        <td>${c.attempts}</td>
                        <td>${c.next_retry_at ? new Date(c.next_retry_at).toLocaleString() : '—'}</td>
                        <td class="wrap">${c.last_error ?? ''}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        ${
          ssl.can_manual_issue
            ? html`<button type="button" onClick=${issue}>Issue a certificate now</button>`
            : ssl.next_manual_issue_at &&
              html`<p class="note">
                A manual issuance is possible again from ${new Date(ssl.next_manual_issue_at).toLocaleString()}.
              </p>`
        }`
    }
  </section>`;
}

function Overview({ domain, reload }: { domain: Domain; reload: () => void }) {
  const [msg, setMsg] = useState('');
  const [error, setError] = useState('');
  const [ns, setNs] = useState<NsCheck | null>(null);
  const base = `/domains/${enc(domain.name)}`;
  const act = async (method: string, path: string, body: unknown, done: string) => {
    setError('');
    setMsg('');
    try {
      await api(method, path, body);
      setMsg(done);
      reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const checkNs = async () => {
    setError('');
    setNs(null);
    try {
      const r = await api<NsCheck>('POST', `${base}/check-ns`);
      setNs(r);
      if (r.ok) reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return html`<div>
    <${Alert} text=${error} />
    ${msg && html`<p role="status" class="ok">${msg}</p>`}
    ${
      domain.dns_mode === 'managed' &&
      html`<section class="card" aria-labelledby="ns-title">
        <h3 id="ns-title">Nameservers</h3>
        ${
          domain.state === 'active'
            ? html`<p>The domain is delegated to these nameservers:</p>`
            : html`<p>Set these nameservers at your registrar (all of them, and no others):</p>`
        }
        <ul>
          ${domain.nameservers.map((n) => html`<li><code>${n}</code></li>`)}
        </ul>
        <button type="button" onClick=${checkNs}>Check nameservers now</button>
        ${
          ns &&
          html`<p role="status" class=${ns.ok ? 'ok' : 'error'}>
            ${
              ns.ok
                ? 'The delegation matches: the domain is active.'
                : `Not delegated yet: ${ns.error ?? 'the nameservers differ'}. Public resolvers see ${ns.nameservers.length ? ns.nameservers.join(', ') : 'no nameservers'}.`
            }
          </p>`
        }
      </section>`
    }
    <${Ssl} domain=${domain} />
    <section class="card" aria-labelledby="dev-title">
      <h3 id="dev-title">Developer mode</h3>
      <p>
        ${domain.developer_mode ? `On until ${new Date(domain.developer_mode_expires_at!).toLocaleString()}: the cache is bypassed.` : 'Off.'}
      </p>
      ${
        domain.developer_mode
          ? html`<button
              type="button"
              onClick=${() => act('DELETE', `${base}/developer-mode`, undefined, 'Developer mode is off.')}
            >
              Turn off
            </button>`
          : html`<button
              type="button"
              onClick=${() => act('POST', `${base}/developer-mode`, {}, 'Developer mode is on for 3 hours.')}
            >
              Turn on for 3 hours
            </button>`
      }
    </section>
    <section class="card" aria-labelledby="purge-title">
      <h3 id="purge-title">Cache</h3>
      <button
        type="button"
        class="danger"
        onClick=${() => confirm('Purge everything cached for this domain?') && act('DELETE', `${base}/cache/`, undefined, 'The whole cache is being purged.')}
      >
        Purge everything
      </button>
    </section>
  </div>`;
}

interface RecordRow {
  id: number;
  name: string;
  type: string;
  destination: string;
  ttl: number;
  proxied: boolean;
}
const TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SRV', 'CAA', 'PTR'];

function RecordForm({
  initial,
  onSave,
  label,
}: {
  initial?: RecordRow;
  onSave: (r: Partial<RecordRow>) => Promise<void>;
  label: string;
}) {
  const [r, setR] = useState<Partial<RecordRow>>(
    initial ?? { name: '', type: 'A', destination: '', ttl: 120, proxied: false },
  );
  const set = (k: keyof RecordRow) => (e: Event) => {
    const t = e.target as HTMLInputElement;
    setR({ ...r, [k]: t.type === 'checkbox' ? t.checked : k === 'ttl' ? Number(t.value) : t.value });
  };
  const submit = (e: Event) => {
    e.preventDefault();
    // Only the fields this form shows: the API refuses fields it does not take, and the type is fixed once made.
    const body: Partial<RecordRow> = { name: r.name, destination: r.destination, ttl: r.ttl, proxied: r.proxied };
    if (!initial) body.type = r.type;
    void onSave(body);
  };
  return html`<form class="row card" onSubmit=${submit} aria-label=${label}>
    <label>Name <input name="name" required value=${r.name} onInput=${set('name')} size="16" /></label>
    <label
      >Type
      <select name="type" value=${r.type} onChange=${set('type')} disabled=${!!initial}>
        ${TYPES.map((t) => html`<option value=${t}>${t}</option>`)}
      </select></label
    >
    <label
      >Content <input name="destination" required value=${r.destination} onInput=${set('destination')} size="28"
    /></label>
    <label
      >TTL <input name="ttl" type="number" min="1" max="604800" value=${r.ttl} onInput=${set('ttl')} size="7"
    /></label>
    <label><input name="proxied" type="checkbox" checked=${r.proxied} onChange=${set('proxied')} /> Proxied</label>
    <button type="submit">${label}</button>
  </form>`;
}

function Records({ domain }: { domain: Domain }) {
  const base = `/domains/${enc(domain.name)}/records/`;
  const [records, setRecords] = useState<RecordRow[] | null>(null);
  const [error, setError] = useState('');
  const [editing, setEditing] = useState<number | null>(null);
  const [zone, setZone] = useState('');
  const [preview, setPreview] = useState<{
    records: RecordRow[];
    errors: { line: number; error: string }[];
    skipped: unknown[];
  } | null>(null);
  const [msg, setMsg] = useState('');
  const load = () => api<RecordRow[]>('GET', base).then(setRecords, (e) => setError(errorText(e)));
  useEffect(() => void load(), [domain.name]);
  const run = async (fn: () => Promise<unknown>, done = '') => {
    setError('');
    setMsg('');
    try {
      await fn();
      if (done) setMsg(done);
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const readFile = async (e: Event) => {
    const file = (e.target as HTMLInputElement).files?.[0];
    if (file) setZone(await file.text());
  };
  return html`<div>
    <${Alert} text=${error} />
    ${msg && html`<p role="status" class="ok">${msg}</p>`}
    <${RecordForm}
      label="Add record"
      onSave=${(r: Partial<RecordRow>) => run(() => api('POST', base, r), 'Record added.')}
    />
    <table>
      <caption>
        DNS records of ${domain.unicode_name} ·
        <a href=${`${base}export`} download=${`${domain.name}.zone`}>Export as a zone file</a>
      </caption>
      <${Head} cols=${['Name', 'Type', 'Content', 'TTL', 'Proxied', '']} />
      <tbody>
        ${records?.map((r) =>
          editing === r.id
            ? html`<tr>
                <td colspan="6">
                  <${RecordForm}
                    label="Save record"
                    initial=${r}
                    onSave=${(b: Partial<RecordRow>) =>
                      run(async () => {
                        await api('PUT', `${base}${r.id}`, b);
                        setEditing(null);
                      }, 'Record saved.')}
                  />
                </td>
              </tr>`
            : html`<tr>
                <td>${r.name}</td>
                <td>${r.type}</td>
                <td class="wrap">${r.destination}</td>
                <td>${r.ttl}</td>
                <td>${r.proxied ? 'Yes' : 'No'}</td>
                <td class="actions">
                  <button type="button" onClick=${() => setEditing(r.id)} aria-label=${`Edit ${r.type} ${r.name}`}>
                    Edit
                  </button>
                  <button
                    type="button"
                    class="danger"
                    aria-label=${`Delete ${r.type} ${r.name}`}
                    onClick=${() => confirm(`Delete ${r.type} ${r.name}?`) && run(() => api('DELETE', `${base}${r.id}`), 'Record deleted.')}
                  >
                    Delete
                  </button>
                </td>
              </tr>`,
        )}
      </tbody>
    </table>
    <section class="card" aria-labelledby="import-title">
      <h3 id="import-title">Import a zone file (BIND)</h3>
      <label>Zone file <input type="file" accept=".zone,.txt,.db,text/plain" onChange=${readFile} /></label>
      <label class="block"
        >Or paste it
        <textarea name="zone" rows="6" cols="70" value=${zone} onInput=${(e: Event) => setZone(value(e))}></textarea>
      </label>
      <button
        type="button"
        onClick=${() => run(async () => setPreview(await api('POST', `${base}import/parse`, { zone })))}
      >
        Preview
      </button>
      ${
        preview &&
        html`<div aria-live="polite">
          <p>
            ${preview.records.length} records to import, ${preview.skipped.length} lines skipped,
            ${preview.errors.length} invalid.
          </p>
          ${
            preview.errors.length > 0 &&
            html`<ul class="error">
              ${preview.errors.map((e) => html`<li>line ${e.line}: ${e.error}</li>`)}
            </ul>`
          }
          <table>
            <caption>
              Preview
            </caption>
            <tbody>
              ${preview.records.map(
                (r) =>
                  html`<tr>
                    <td>${r.name}</td>
                    <td>${r.type}</td>
                    <td class="wrap">${r.destination}</td>
                    <td>${r.ttl}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
          <button
            type="button"
            disabled=${preview.errors.length > 0 || preview.records.length === 0}
            onClick=${() =>
              run(async () => {
                const res = await api<{ created: number }>('POST', `${base}import`, { zone });
                setPreview(null);
                setZone('');
                setMsg(`Imported ${res.created} records.`);
              })}
          >
            Import ${preview.records.length} records
          </button>
        </div>`
      }
    </section>
  </div>`;
}

const TABS = ['overview', 'dns', 'rules', 'analytics'] as const;
type Tab = (typeof TABS)[number];

export function DomainPage({ name, tab }: { name: string; tab: string }) {
  const [domain, setDomain] = useState<Domain | null>(null);
  const [error, setError] = useState('');
  const load = () => api<Domain>('GET', `/domains/${enc(name)}`).then(setDomain, (e) => setError(errorText(e)));
  useEffect(() => void load(), [name]);
  const current: Tab = (TABS as readonly string[]).includes(tab) ? (tab as Tab) : 'overview';
  if (error) return html`<${Alert} text=${error} />`;
  if (!domain) return html`<p>Loading…</p>`;
  return html`<section aria-labelledby="domain-title">
    <h2 id="domain-title">${domain.unicode_name} <small>${domain.state} · ${domain.role}</small></h2>
    <nav aria-label="Domain sections" class="tabs">
      ${TABS.map(
        (t) =>
          html`<a
            href=${`/panel/domains/${enc(name)}/${t}`}
            onClick=${link}
            aria-current=${t === current ? 'page' : undefined}
            >${{ overview: 'Overview', dns: 'DNS', rules: 'Rules', analytics: 'Analytics' }[t]}</a
          >`,
      )}
    </nav>
    ${current === 'overview' && html`<${Overview} domain=${domain} reload=${load} />`}
    ${current === 'dns' && html`<${Records} domain=${domain} />`}
    ${current === 'rules' && html`<${Rules} domain=${domain.name} />`}
    ${current === 'analytics' && html`<${Analytics} domain=${domain.name} />`}
  </section>`;
}
