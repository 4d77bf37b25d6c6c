// A domain's rules, one type at a time: the list (enable/disable, reorder by drag or with the move buttons, delete)
// and an editor per type: a form for the common fields of the type (the fields are those of the API's rule schemas,
// control-plane/src/areas/rules/schemas.ts) and, for the rest, the rule as JSON. A refused save shows the API's error.
import { useEffect, useState } from 'preact/hooks';
import { Alert, Head, html } from './html.js';
import { api, errorText } from './api.js';

/** How a field is edited: text (empty: not sent), a number, a yes/no, one of a list, several of a list, lines. */
type Kind = 'text' | 'area' | 'number' | 'bool' | 'select' | 'checks' | 'lines' | 'headers' | 'users';
interface Field {
  key: string;
  label: string;
  kind: Kind;
  /** select and checks: the values; a select's first value '' reads "Default". */
  options?: (string | number)[];
  /** bool and checks: the value the API takes when the field is not sent. */
  def?: unknown;
  required?: boolean;
  hint?: string;
  /** lines: the list is this field of an object (sso.emails); the object's other fields are kept. */
  sub?: string;
}

const f = (key: string, label: string, kind: Kind, more: Partial<Field> = {}): Field => ({ key, label, kind, ...more });
const sel = (key: string, label: string, options: (string | number)[], hint?: string) =>
  f(key, label, 'select', { options: ['', ...options], hint });

/** Fields shown for every type: where the rule applies. */
const SCOPE: Field[] = [
  f('path_includes', 'Paths', 'lines', { hint: 'One per line; empty: every path (/*)' }),
  f('path_excludes', 'Except paths', 'lines'),
  sel('path_match_type', 'Path patterns', ['wildcard', 'regex']),
  f('host_includes', 'Hosts', 'lines', { hint: 'One per line; empty: every host' }),
  f('host_excludes', 'Except hosts', 'lines'),
  sel('host_match_type', 'Host patterns', ['exact', 'wildcard', 'regex']),
  f('ip_includes', 'Client addresses', 'lines', { hint: 'Addresses, CIDRs or ranges; empty: every client' }),
  f('ip_excludes', 'Except addresses', 'lines'),
  sel('action_mode', 'Mode', ['enforce', 'dry_run'], 'dry_run: logged as would-have-acted, the request passes'),
];

const ORIGIN: Field[] = [
  f('address', 'Origin address', 'text', { hint: 'IP address or host name' }),
  f('port', 'Port', 'number'),
  sel('scheme', 'Scheme', ['http', 'https']),
  f('host_header', 'Host header', 'text'),
  f('name', 'Label', 'text'),
];

/** The own fields of each type (api-spec.md "Rule" and the rules API's schemas); the rest is edited as JSON. */
const TYPES: Record<string, { label: string; fields: Field[] }> = {
  redirect: {
    label: 'Redirect',
    fields: [
      f('target', 'Target', 'text', { required: true, hint: 'https://… or /path; $1…$9 are the path captures' }),
      sel('status_code', 'Status', [301, 302, 307, 308]),
      f('keep_query', 'Keep the query string', 'bool', { def: true }),
    ],
  },
  rewrite: {
    label: 'Rewrite',
    fields: [
      f('path', 'New path', 'text', { hint: 'Starts with /; $1…$9 as in redirects' }),
      f('query', 'New query', 'text'),
      f('append_query', 'Append to the query', 'bool', { def: false }),
    ],
  },
  header: {
    label: 'Headers',
    fields: [
      f('request_headers', 'Request headers', 'headers', {
        hint: 'One per line: set Name: value, add Name: value, remove Name',
      }),
      f('response_headers', 'Response headers', 'headers'),
    ],
  },
  cache: {
    label: 'Cache',
    fields: [
      sel('action', 'Action', ['cache', 'bypass']),
      f('edge_ttl', 'Edge TTL (s)', 'number', { hint: '0: as the origin says' }),
      f('browser_ttl', 'Browser TTL (s)', 'number', { hint: '0: origin header unchanged' }),
      f('respect_origin', 'Respect the origin’s no-store', 'bool', { def: true }),
      f('stale_on_error', 'Serve stale on origin errors', 'bool', { def: true }),
      sel('query', 'Query in the cache key', ['include', 'ignore', 'sort', 'only']),
      f('query_keys', 'Query keys (for only)', 'lines'),
    ],
  },
  drop: {
    label: 'Drop',
    fields: [
      sel('action', 'Action', ['status', 'close']),
      f('status_code', 'Status', 'number', { hint: '400–599; default 403' }),
      f('body', 'Body', 'area'),
    ],
  },
  waf: {
    label: 'WAF',
    fields: [
      sel('paranoia_level', 'Paranoia level', [1, 2, 3, 4]),
      f('anomaly_threshold', 'Anomaly threshold', 'number', { hint: 'Default 5' }),
      f('excluded_rules', 'Managed rules off', 'lines', { hint: 'Ids (942100), prefixes (942) or classes (sqli)' }),
      f('inspect_body', 'Inspect request bodies', 'bool', { def: true }),
    ],
  },
  captcha: {
    label: 'Captcha',
    fields: [f('pass_ttl_s', 'Pass valid for (s)', 'number', { hint: '60–86400; default 1800' })],
  },
  rate_limit: {
    label: 'Rate limit',
    fields: [
      f('requests', 'Requests', 'number', { required: true }),
      f('period_s', 'Per (s)', 'number', { required: true }),
      sel('key', 'Counted per', ['ip', 'ip_path', 'path', 'header', 'ip_header']),
      f('key_header', 'Header (for header keys)', 'text'),
      sel('action', 'Above the limit', ['block', 'captcha']),
      f('block_s', 'Limited for (s)', 'number', { hint: 'Default 60' }),
    ],
  },
  bot_route: {
    label: 'Bots',
    fields: [
      f('classes', 'Clients', 'checks', {
        options: ['verified_crawler', 'unverified_crawler', 'ai_crawler', 'automation', 'human'],
        def: [],
      }),
      sel('action', 'Action', ['block', 'challenge', 'allow', 'route', 'log']),
      ...ORIGIN,
    ],
  },
  fingerprint: {
    label: 'Fingerprints',
    fields: [
      f('fingerprints', 'JA4H fingerprints', 'lines', { required: true }),
      sel('action', 'Action', ['block', 'challenge', 'allow', 'log']),
    ],
  },
  origin_route: { label: 'Origin route', fields: ORIGIN },
  origin_pool: {
    label: 'Origin pool',
    fields: [
      sel('method', 'Method', ['weighted', 'failover'], 'The origins and health check are edited as JSON below'),
    ],
  },
  error_page: {
    label: 'Error pages',
    fields: [
      f('statuses', 'Statuses', 'lines', { required: true, hint: '404, or a range 500-599, one per line' }),
      f('body', 'Page', 'area', { required: true }),
      f('content_type', 'Content type', 'text'),
    ],
  },
  optimize: {
    label: 'Optimize',
    fields: [
      f('compression', 'Compression', 'checks', { options: ['br', 'gzip'], def: ['br', 'gzip'] }),
      f('content_types', 'Content types', 'lines', { hint: 'Empty: the text formats' }),
      f('min_size', 'Minimum size (bytes)', 'number'),
      f('minify_html', 'Minify HTML', 'bool', { def: false }),
      f('minify_css', 'Minify CSS', 'bool', { def: false }),
      f('minify_js', 'Minify JavaScript', 'bool', { def: false }),
      f('markdown_for_agents', 'Markdown for agents', 'bool', { def: false }),
    ],
  },
  basic_auth: {
    label: 'Basic auth',
    fields: [
      f('realm', 'Realm', 'text'),
      f('users', 'Users', 'users', {
        hint: 'One per line: name:password; a name alone keeps its stored password. At least one, or SSO accounts',
      }),
      f('sso', 'SSO accounts', 'lines', {
        sub: 'emails',
        hint: 'Sign-in addresses let through once signed in to the platform, one per line',
      }),
    ],
  },
  custom: {
    label: 'Custom',
    fields: [
      f('expression', 'Expression', 'area', { required: true, hint: 'e.g. http.request.uri.path wildcard "/admin/*"' }),
      sel('action', 'Action', ['block', 'challenge', 'allow', 'skip', 'log']),
      f('description', 'Description', 'text'),
    ],
  },
};

/** Fields the API answers and ignores on write: never shown in the JSON. */
const READ_ONLY = new Set([
  'id',
  'domain_id',
  'type',
  'created_at',
  'updated_at',
  'country',
  'default_protection',
  'record_id',
]);

interface Rule {
  id: number;
  enabled: boolean;
  priority: number;
  [k: string]: unknown;
}
type Draft = Record<string, unknown>;

const enc = encodeURIComponent;

/** An array field as lines, and back (blank lines dropped). */
function toLines(kind: Kind, v: unknown): string {
  if (!Array.isArray(v)) return '';
  if (kind === 'headers')
    return (v as { op: string; name: string; value?: string }[])
      .map((h) => (h.op === 'remove' ? `remove ${h.name}` : `${h.op} ${h.name}: ${h.value ?? ''}`))
      .join('\n');
  if (kind === 'users') return (v as { username: string }[]).map((u) => u.username).join('\n');
  return v.map(String).join('\n');
}

function fromLines(kind: Kind, text: string): unknown[] {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (kind === 'headers')
    return lines.map((l) => {
      const m = /^(set|add|remove)\s+([^\s:]+)\s*(?::\s?(.*))?$/i.exec(l);
      if (!m) throw new Error(`"${l}": write set Name: value, add Name: value or remove Name`);
      const op = m[1]!.toLowerCase();
      return op === 'remove' ? { op, name: m[2] } : { op, name: m[2], value: m[3] ?? '' };
    });
  if (kind === 'users')
    return lines.map((l) => {
      const i = l.indexOf(':');
      return i === -1 ? { username: l } : { username: l.slice(0, i), password: l.slice(i + 1) };
    });
  return lines;
}

/** The rule as the editor starts from it: its writable fields. */
function writable(r: Draft): Draft {
  return Object.fromEntries(Object.entries(r).filter(([k]) => !READ_ONLY.has(k)));
}

/** A labelled control with its hint under it (the hint is the control's description). */
function Labelled({ id, label, hint, children }: { id: string; label: string; hint?: string; children: unknown }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children} ${hint && html`<small id=${`${id}-hint`}>${hint}</small>`}
  </div>`;
}

function FieldInput({
  field,
  draft,
  set,
  id,
}: {
  field: Field;
  draft: Draft;
  set: (k: string, v: unknown) => void;
  id: string;
}) {
  const v = draft[field.key];
  const described = field.hint ? `${id}-hint` : undefined;
  const label = `${field.label}${field.required ? ' (required)' : ''}`;
  const val = (e: Event) => (e.target as HTMLInputElement).value;
  const text = (e: Event) => set(field.key, val(e) === '' ? undefined : val(e));
  switch (field.kind) {
    case 'bool':
      return html`<label class="check"
        ><input
          type="checkbox"
          name=${field.key}
          checked=${(v ?? field.def) === true}
          onChange=${(e: Event) => set(field.key, (e.target as HTMLInputElement).checked)}
        />
        ${field.label}</label
      >`;
    case 'checks': {
      const chosen = (Array.isArray(v) ? v : (field.def as unknown[])) as string[];
      return html`<fieldset class="checks">
        <legend>${label}</legend>
        ${field.options!.map(
          (o) =>
            html`<label class="check"
              ><input
                type="checkbox"
                checked=${chosen.includes(String(o))}
                onChange=${(e: Event) =>
                  set(
                    field.key,
                    (e.target as HTMLInputElement).checked
                      ? [...chosen, String(o)]
                      : chosen.filter((c) => c !== String(o)),
                  )}
              />
              ${o}</label
            >`,
        )}
      </fieldset>`;
    }
    case 'select':
      return html`<${Labelled} id=${id} label=${label} hint=${field.hint}>
        <select
          id=${id}
          name=${field.key}
          value=${v === undefined ? '' : String(v)}
          aria-describedby=${described}
          onChange=${(e: Event) => {
            const s = val(e);
            set(field.key, s === '' ? undefined : field.options!.find((x) => String(x) === s));
          }}
        >
          ${field.options!.map((o) => html`<option value=${String(o)}>${o === '' ? 'Default' : o}</option>`)}
        </select>
      <//>`;
    case 'number':
      return html`<${Labelled} id=${id} label=${label} hint=${field.hint}>
        <input
          id=${id}
          type="number"
          name=${field.key}
          required=${field.required}
          value=${v === undefined ? '' : String(v)}
          aria-describedby=${described}
          onInput=${(e: Event) => set(field.key, val(e) === '' ? undefined : Number(val(e)))}
        />
      <//>`;
    case 'text':
      return html`<${Labelled} id=${id} label=${label} hint=${field.hint}>
        <input
          id=${id}
          name=${field.key}
          required=${field.required}
          value=${typeof v === 'string' ? v : ''}
          aria-describedby=${described}
          onInput=${text}
        />
      <//>`;
    case 'area':
      return html`<${Labelled} id=${id} label=${label} hint=${field.hint}>
        <textarea
          id=${id}
          name=${field.key}
          rows="3"
          required=${field.required}
          value=${typeof v === 'string' ? v : ''}
          aria-describedby=${described}
          onInput=${text}
        ></textarea>
      <//>`;
    default: {
      if (!field.sub) return html`<${LinesInput} field=${field} value=${v} set=${set} label=${label} id=${id} />`;
      const obj = (v ?? {}) as Record<string, unknown>;
      const setSub = (k: string, list: unknown) =>
        set(
          k,
          list === undefined || (Array.isArray(list) && !list.length) ? undefined : { ...obj, [field.sub!]: list },
        );
      return html`<${LinesInput} field=${field} value=${obj[field.sub]} set=${setSub} label=${label} id=${id} />`;
    }
  }
}

/** A list edited one entry a line; the text is kept as typed, the parsed list (or the parse error) goes to the draft. */
function LinesInput({
  field,
  value,
  set,
  label,
  id,
}: {
  field: Field;
  value: unknown;
  set: (k: string, v: unknown) => void;
  label: string;
  id: string;
}) {
  const [text, setText] = useState(() => toLines(field.kind, value));
  const [problem, setProblem] = useState('');
  return html`<${Labelled} id=${id} label=${label} hint=${field.hint}>
    <textarea
      id=${id}
      name=${field.key}
      rows="2"
      value=${text}
      aria-describedby=${field.hint ? `${id}-hint` : undefined}
      aria-invalid=${problem ? 'true' : undefined}
      onInput=${(e: Event) => {
        const t = (e.target as HTMLTextAreaElement).value;
        setText(t);
        try {
          const list = fromLines(field.kind, t);
          setProblem('');
          set(field.key, list.length || value !== undefined ? list : undefined);
        } catch (err) {
          setProblem(errorText(err));
        }
      }}
    ></textarea>
    ${problem && html`<small class="error" role="alert">${problem}</small>`}
  <//>`;
}

/** The editor of one rule (or a new one): the type's form, the scope, and the whole rule as JSON. */
function RuleEditor({
  type,
  rule,
  onSave,
  onCancel,
}: {
  type: string;
  rule: Rule | null;
  onSave: (body: Draft) => Promise<string>;
  onCancel: () => void;
}) {
  const [draft, setDraft] = useState<Draft>(() => (rule ? writable(rule) : {}));
  // Bumped when the JSON replaces the draft, so the line fields start again from it.
  const [generation, setGeneration] = useState(0);
  const [json, setJson] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const spec = TYPES[type]!;
  const set = (k: string, v: unknown) =>
    setDraft((d) => {
      const next = { ...d };
      if (v === undefined) delete next[k];
      else next[k] = v;
      return next;
    });
  const title = rule ? `Edit ${spec.label} rule ${rule.id}` : `New ${spec.label} rule`;
  const submit = async (e: Event) => {
    e.preventDefault();
    setError('');
    let body = draft;
    if (json !== null) {
      try {
        body = JSON.parse(json) as Draft;
      } catch (err) {
        setError(`The JSON is not valid: ${errorText(err)}`);
        return;
      }
    }
    setBusy(true);
    setError(await onSave(body));
    setBusy(false);
  };
  const fieldsOf = (list: Field[], prefix: string) =>
    list.map(
      (field) =>
        html`<${FieldInput}
          key=${`${generation}-${field.key}`}
          field=${field}
          draft=${draft}
          set=${set}
          id=${`${prefix}-${field.key}`}
        />`,
    );
  return html`<form class="card rule-editor" onSubmit=${submit} aria-label=${title}>
    <h3>${title}</h3>
    <${Alert} text=${error} />
    <fieldset disabled=${json !== null}>
      <legend>${spec.label}</legend>
      <div class="fields">${fieldsOf(spec.fields, 'own')}</div>
    </fieldset>
    <details>
      <summary>Where it applies (paths, hosts, client addresses, mode)</summary>
      <fieldset disabled=${json !== null}>
        <legend class="sr-only">Scope</legend>
        <div class="fields">${fieldsOf(SCOPE, 'scope')}</div>
      </fieldset>
    </details>
    <details open=${json !== null}>
      <summary>Advanced: the rule as JSON</summary>
      ${
        json === null
          ? html`<button type="button" onClick=${() => setJson(JSON.stringify(draft, null, 2))}>Edit as JSON</button>`
          : html`<label class="block"
                >Rule (JSON, as the API takes it)
                <textarea
                  name="json"
                  rows="12"
                  value=${json}
                  onInput=${(e: Event) => setJson((e.target as HTMLTextAreaElement).value)}
                ></textarea>
              </label>
              <button
                type="button"
                onClick=${() => {
                  try {
                    setDraft(JSON.parse(json) as Draft);
                    setGeneration((g) => g + 1);
                    setJson(null);
                    setError('');
                  } catch (err) {
                    setError(`The JSON is not valid: ${errorText(err)}`);
                  }
                }}
              >
                Back to the form
              </button>`
      }
    </details>
    <div class="row">
      <button type="submit" disabled=${busy}>Save rule</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

/** One line about a rule: its own fields and scope that differ from the defaults. */
function summary(type: string, r: Rule): string {
  const parts: string[] = [];
  for (const field of [...TYPES[type]!.fields, ...SCOPE]) {
    const v = field.sub ? (r[field.key] as Record<string, unknown> | undefined)?.[field.sub] : r[field.key];
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    if (field.key === 'path_includes' && Array.isArray(v) && v.length === 1 && v[0] === '/*') continue;
    if (['path_match_type', 'host_match_type'].includes(field.key)) continue;
    if (field.key === 'action_mode' && v === 'enforce') continue;
    const shown = Array.isArray(v)
      ? toLines(field.kind, v).replaceAll('\n', ', ')
      : typeof v === 'boolean'
        ? v
          ? 'yes'
          : 'no'
        : String(v);
    parts.push(`${field.label}: ${shown}`);
  }
  const text = parts.join(' · ') || 'Default settings';
  return text.length > 200 ? `${text.slice(0, 197)}…` : text;
}

export function Rules({ domain }: { domain: string }) {
  const [type, setType] = useState('redirect');
  const [rules, setRules] = useState<Rule[] | null>(null);
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const [editing, setEditing] = useState<Rule | 'new' | null>(null);
  const [dragged, setDragged] = useState<number | null>(null);
  const [over, setOver] = useState<number | null>(null);
  const base = type === 'custom' ? `/domains/${enc(domain)}/custom-rules/` : `/domains/${enc(domain)}/rules/${type}/`;
  const label = TYPES[type]!.label;
  const load = () => api<Rule[]>('GET', base).then(setRules, (e) => setError(errorText(e)));
  useEffect(() => {
    setRules(null);
    setEditing(null);
    setError('');
    setStatus('');
    void load();
  }, [domain, type]);
  const run = async (fn: () => Promise<unknown>, done = '') => {
    setError('');
    setStatus('');
    try {
      await fn();
      if (done) setStatus(done);
    } catch (e) {
      setError(errorText(e));
    }
    await load();
  };
  /** Moves the rule at `from` to `to` (list indexes) and saves the order. */
  const move = (from: number, to: number) => {
    if (!rules || from === to || to < 0 || to >= rules.length) return;
    const next = rules.slice();
    const [r] = next.splice(from, 1);
    next.splice(to, 0, r!);
    setRules(next);
    return run(
      () => api('PATCH', `${base}reorder`, { ids: next.map((x) => x.id) }),
      `Rule ${r!.id} moved to position ${to + 1}.`,
    );
  };
  const save = async (body: Draft): Promise<string> => {
    try {
      if (editing === 'new') await api('POST', base, body);
      else await api('PUT', `${base}${editing!.id}`, body);
    } catch (e) {
      return errorText(e);
    }
    setStatus(editing === 'new' ? `${label} rule created.` : `Rule ${(editing as Rule).id} saved.`);
    setEditing(null);
    await load();
    return '';
  };
  const drop = (e: DragEvent, to: number) => {
    e.preventDefault();
    const from = rules?.findIndex((r) => r.id === dragged) ?? -1;
    setDragged(null);
    setOver(null);
    if (from !== -1) void move(from, to);
  };
  return html`<div>
    <label
      >Rule type
      <select value=${type} onChange=${(e: Event) => setType((e.target as HTMLSelectElement).value)}>
        ${Object.entries(TYPES).map(([t, s]) => html`<option value=${t}>${s.label}</option>`)}
      </select></label
    >
    <${Alert} text=${error} />
    <p role="status" class="ok">${status}</p>
    <table class="rules">
      <caption>
        ${label} rules, first evaluated first. Drag a row by its handle, or use the move buttons.
      </caption>
      <${Head} cols=${['', 'Order', 'Rule', 'Enabled', '']} />
      <tbody>
        ${rules?.map(
          (r, i) =>
            html`<tr
              data-rule-id=${r.id}
              class=${[dragged === r.id && 'dragging', over === i && dragged !== r.id && 'drop-target']
                .filter(Boolean)
                .join(' ')}
              onDragOver=${(e: DragEvent) => {
                if (dragged === null) return;
                e.preventDefault();
                if (over !== i) setOver(i);
              }}
              onDrop=${(e: DragEvent) => drop(e, i)}
            >
              <td
                class="handle"
                draggable="true"
                title="Drag to reorder"
                aria-hidden="true"
                onDragStart=${(e: DragEvent) => {
                  e.dataTransfer?.setData('text/plain', String(r.id));
                  if (e.dataTransfer) e.dataTransfer.effectAllowed = 'move';
                  setDragged(r.id);
                }}
                onDragEnd=${() => {
                  setDragged(null);
                  setOver(null);
                }}
              >
                ⠿
              </td>
              <td>${i + 1}</td>
              <td class="wrap">${summary(type, r)}</td>
              <td>
                <label class="check"
                  ><input
                    type="checkbox"
                    checked=${r.enabled}
                    onChange=${() => run(() => api('PATCH', `${base}${r.id}/enabled`, { enabled: !r.enabled }))}
                  />
                  <span class="sr-only">Rule ${r.id} </span>${r.enabled ? 'On' : 'Off'}</label
                >
              </td>
              <td class="actions">
                <button
                  type="button"
                  disabled=${i === 0}
                  onClick=${() => move(i, i - 1)}
                  aria-label=${`Move rule ${r.id} up`}
                >
                  ↑
                </button>
                <button
                  type="button"
                  disabled=${i === rules.length - 1}
                  onClick=${() => move(i, i + 1)}
                  aria-label=${`Move rule ${r.id} down`}
                >
                  ↓
                </button>
                <button type="button" onClick=${() => setEditing(r)} aria-label=${`Edit rule ${r.id}`}>Edit</button>
                <button
                  type="button"
                  class="danger"
                  aria-label=${`Delete rule ${r.id}`}
                  onClick=${() =>
                    confirm(`Delete rule ${r.id}?`) &&
                    run(() => api('DELETE', `${base}${r.id}`), `Rule ${r.id} deleted.`)}
                >
                  Delete
                </button>
              </td>
            </tr>`,
        )}
        ${
          rules?.length === 0 &&
          html`<tr>
            <td colspan="5">No ${label} rules.</td>
          </tr>`
        }
      </tbody>
    </table>
    ${
      editing
        ? html`<${RuleEditor}
            key=${editing === 'new' ? `new-${type}` : editing.id}
            type=${type}
            rule=${editing === 'new' ? null : editing}
            onSave=${save}
            onCancel=${() => setEditing(null)}
          />`
        : html`<button type="button" onClick=${() => setEditing('new')}>New ${label} rule</button>`
    }
  </div>`;
}
