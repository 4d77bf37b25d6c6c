// Turns an API create or update into a stored record, applying every rule of the spec's DNS record table.
// Field checks only; rules that need the rest of the zone (CNAME exclusivity, duplicates) are in zone-index.ts.
import { parseDestination } from './destination.js';
import { invalid } from './errors.js';
import { absoluteName, normalizeHostName, normalizeOwnerName } from './names.js';
import {
  LIMITS,
  PRIORITY_TYPES,
  PROXIABLE_TYPES,
  RECORD_TYPES,
  type HostHeaderMode,
  type RecordCreate,
  type RecordFields,
  type RecordPatch,
  type RecordType,
  type Scheme,
} from './types.js';

export function parseType(raw: string): RecordType {
  const t = raw.trim().toUpperCase();
  if (!(RECORD_TYPES as readonly string[]).includes(t)) throw invalid(`type must be one of ${RECORD_TYPES.join(', ')}`);
  return t as RecordType;
}

/**
 * Scheme behaviour of the spec: `Https` → `port`, 443 when unset or out of range; `Http` → `port`, 80 when
 * unset or out of range; `Auto` → always 443; `Default`, empty or unrecognised → `Auto` with 443.
 * Matching is case-insensitive ("https" is `Https`).
 */
export function normalizeScheme(
  scheme: string | undefined,
  port: number | undefined,
): { scheme: Scheme; port: number } {
  const s = (scheme ?? '').trim().toLowerCase();
  const inRange = port !== undefined && Number.isInteger(port) && port >= 1 && port <= 65535;
  if (s === 'https') return { scheme: 'Https', port: inRange ? port : 443 };
  if (s === 'http') return { scheme: 'Http', port: inRange ? port : 80 };
  return { scheme: 'Auto', port: 443 };
}

function intInRange(value: number, min: number, max: number, field: string): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw invalid(`${field} must be between ${min} and ${max}`);
  return value;
}

function hostHeader(raw: string): string | null {
  if (raw.trim() === '') return null;
  const host = normalizeHostName(raw);
  if (host === null) throw invalid('host_header must be a host name');
  return host;
}

function hostHeaderMode(raw: string): HostHeaderMode {
  if (raw !== 'own' && raw !== 'target') throw invalid('host_header_mode must be one of: own, target');
  return raw;
}

function comment(raw: string): string | null {
  if ([...raw].length > LIMITS.commentMax) throw invalid(`comment must be at most ${LIMITS.commentMax} characters`);
  return raw === '' ? null : raw;
}

/** What a record is when its request leaves a field out. */
export const RECORD_DEFAULTS: Omit<RecordFields, 'name' | 'type' | 'destination'> = {
  mxPriority: null,
  ttl: LIMITS.ttlDefault,
  proxied: false,
  captcha: false,
  scheme: 'Auto',
  port: 443,
  hostHeader: null,
  hostHeaderMode: 'own',
  monitor: false,
  timeout: LIMITS.timeoutDefault,
  comment: null,
};

export interface BuildOptions {
  /** TXT destinations are final text, not possibly-quoted presentation form (zone-file import). */
  literalTxt?: boolean;
}

/** Applies `patch` on top of `base` (the defaults for a create, the stored record for an update). */
function merge(
  zone: string,
  base: RecordFields,
  patch: RecordPatch,
  isCreate: boolean,
  opts: BuildOptions = {},
): RecordFields {
  const type = isCreate ? parseType(patch.type ?? '') : base.type;
  if (!isCreate && patch.type !== undefined && parseType(patch.type) !== base.type) {
    throw invalid('type cannot be changed; delete the record and create a new one');
  }
  // A create's base is its own (buildRecord): changed in place rather than copied, one object per record built.
  const out: RecordFields = isCreate ? base : { ...base };
  out.type = type;
  if (patch.name !== undefined) out.name = normalizeOwnerName(zone, patch.name);
  if (patch.destination !== undefined) {
    const parsed = parseDestination(type, patch.destination, opts);
    out.destination = parsed.destination;
    if (parsed.priority !== undefined) {
      if (patch.mx_priority !== undefined && patch.mx_priority !== parsed.priority) {
        throw invalid('SRV priority given twice with different values (destination and mx_priority)');
      }
      out.mxPriority = parsed.priority;
    }
  }
  // mx_priority is meaningful for MX and SRV only; on other types it is ignored (never stored).
  if (PRIORITY_TYPES.has(type)) {
    if (patch.mx_priority !== undefined)
      out.mxPriority = intInRange(patch.mx_priority, 0, LIMITS.priorityMax, 'mx_priority');
    if (out.mxPriority === null) out.mxPriority = LIMITS.priorityDefault;
  } else {
    out.mxPriority = null;
  }
  if (patch.ttl !== undefined) out.ttl = intInRange(patch.ttl, LIMITS.ttlMin, LIMITS.ttlMax, 'ttl');
  if (patch.timeout !== undefined)
    out.timeout = intInRange(patch.timeout, LIMITS.timeoutMin, LIMITS.timeoutMax, 'timeout');
  if (patch.proxied !== undefined) out.proxied = patch.proxied;
  if (patch.captcha !== undefined) out.captcha = patch.captcha;
  if (patch.monitor !== undefined) out.monitor = patch.monitor;
  if (patch.host_header !== undefined) out.hostHeader = hostHeader(patch.host_header);
  if (patch.host_header_mode !== undefined) out.hostHeaderMode = hostHeaderMode(patch.host_header_mode);
  if (patch.comment !== undefined) out.comment = comment(patch.comment);
  if (patch.scheme !== undefined || patch.port !== undefined) {
    // A scheme change without a port takes the new scheme's default port; a port alone keeps the scheme.
    const schemeChanged = patch.scheme !== undefined && normalizeScheme(patch.scheme, undefined).scheme !== base.scheme;
    const port = patch.port ?? (isCreate || schemeChanged ? undefined : base.port);
    Object.assign(out, normalizeScheme(patch.scheme ?? base.scheme, port));
  }
  if (out.proxied && !PROXIABLE_TYPES.has(type)) throw invalid('only A, AAAA and CNAME records can be proxied');
  if (out.proxied) out.ttl = LIMITS.proxiedTtl;
  if (out.name === '@' && type === 'CNAME') throw invalid('a CNAME record cannot be at the zone apex');
  if (out.name === '@' && type === 'NS') throw invalid('NS records at the zone apex are managed by the platform');
  if (type === 'CNAME' && out.destination === absoluteName(zone, out.name))
    throw invalid('a CNAME record cannot point to itself');
  return out;
}

/** A new record from a create body. Throws RecordError (400) naming the first broken rule. */
export function buildRecord(zone: string, input: RecordCreate, opts: BuildOptions = {}): RecordFields {
  if (typeof input.name !== 'string') throw invalid('name is required');
  if (typeof input.destination !== 'string') throw invalid('destination is required');
  const d = RECORD_DEFAULTS;
  // Written out rather than spread: one literal of a fixed shape per record (an import builds a million).
  const base: RecordFields = {
    name: '@',
    type: 'A',
    destination: '',
    mxPriority: d.mxPriority,
    ttl: d.ttl,
    proxied: d.proxied,
    captcha: d.captcha,
    scheme: d.scheme,
    port: d.port,
    hostHeader: d.hostHeader,
    hostHeaderMode: d.hostHeaderMode,
    monitor: d.monitor,
    timeout: d.timeout,
    comment: d.comment,
  };
  return merge(zone, base, input, true, opts);
}

/** The record `current` after an update; omitted fields are kept. */
export function applyPatch(zone: string, current: RecordFields, patch: RecordPatch): RecordFields {
  return merge(zone, current, patch, false);
}

/** True when two records are the same DNS data (name, type, destination and priority). */
export function sameData(a: RecordFields, b: RecordFields): boolean {
  return a.name === b.name && a.type === b.type && a.destination === b.destination && a.mxPriority === b.mxPriority;
}

const FIELD_KEYS: (keyof RecordFields)[] = [
  'name',
  'type',
  'destination',
  'mxPriority',
  'ttl',
  'proxied',
  'captcha',
  'scheme',
  'port',
  'hostHeader',
  'hostHeaderMode',
  'monitor',
  'timeout',
  'comment',
];

/** True when every stored field is equal (an update that changes nothing writes nothing). */
export function sameFields(a: RecordFields, b: RecordFields): boolean {
  return FIELD_KEYS.every((k) => a[k] === b[k]);
}
