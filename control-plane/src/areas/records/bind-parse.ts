// Reads a master file (RFC 1035 §5, with RFC 2308 $TTL and BIND's TTL units) into record creates for the
// zone, one per resource record, with the line each came from. Nothing here touches the database: the
// caller validates each create with buildRecord() exactly as the API does.
import { entriesOf, type Token } from './bind-tokenizer.js';
import { unescapeCharString } from './destination.js';
import { LIMITS, RECORD_TYPES, type RecordCreate } from './types.js';

export interface ParsedRecord {
  line: number;
  input: RecordCreate;
}

export interface ParseResult {
  records: ParsedRecord[];
  skipped: { line: number; reason: string }[];
  errors: { line: number; error: string }[];
  /** The file holds more than `maxRecords` records (valid or not): reading stopped there, nothing else is reported. */
  tooLarge: boolean;
}

const CLASSES = new Set(['IN', 'CH', 'HS', 'CS']);
const META_FIELDS: Record<string, 'boolean' | 'number' | 'string'> = {
  proxied: 'boolean',
  captcha: 'boolean',
  monitor: 'boolean',
  scheme: 'string',
  port: 'number',
  host_header: 'string',
  host_header_mode: 'string',
  timeout: 'number',
  comment: 'string',
};

/** A TTL: seconds, or BIND's units (1h30m, 2d, 1w). Null when `s` is not a TTL. */
export function parseTtl(s: string): number | null {
  if (/^\d+$/.test(s)) return Number(s);
  if (!/^(\d+[smhdw])+$/i.test(s)) return null;
  const unit: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
  let total = 0;
  for (const m of s.toLowerCase().matchAll(/(\d+)([smhdw])/g)) total += Number(m[1]) * unit[m[2]!]!;
  return total;
}

class LineError extends Error {}

function plain(t: Token | undefined, what: string): string {
  if (!t) throw new LineError(`missing ${what}`);
  if (t.quoted) throw new LineError(`${what} may not be quoted`);
  if (t.text.includes('\\')) throw new LineError(`escaped characters in ${what} are not supported`);
  return t.text;
}

/** Absolute name (with trailing dot) of `name` relative to `origin` (with trailing dot). */
function absolute(name: string, origin: string): string {
  if (name === '@') return origin;
  if (name.endsWith('.')) return name.toLowerCase();
  return `${name}.${origin}`.toLowerCase();
}

const charString = (t: Token): string => Buffer.from(unescapeCharString(t.text)).toString('utf8');

/** Throws unless the record has exactly `n` RDATA fields. */
function want(type: string, rd: Token[], n: number): void {
  if (rd.length !== n)
    throw new LineError(`${type} record needs ${n} RDATA field${n > 1 ? 's' : ''}, found ${rd.length}`);
}

// No closure per line here: a file may hold a million records (and under tsx each closure made is also named).
function destinationOf(type: string, rd: Token[], origin: string): { destination: string; priority?: number } {
  switch (type) {
    case 'A':
    case 'AAAA':
      want(type, rd, 1);
      return { destination: plain(rd[0], 'address') };
    case 'CNAME':
    case 'NS':
    case 'PTR':
      want(type, rd, 1);
      return { destination: absolute(plain(rd[0], 'target'), origin) };
    case 'MX': {
      want(type, rd, 2);
      const priority = Number(plain(rd[0], 'preference'));
      if (!/^\d+$/.test(rd[0]!.text)) throw new LineError('MX preference must be a number');
      return { destination: absolute(plain(rd[1], 'exchange'), origin), priority };
    }
    case 'SRV': {
      want(type, rd, 4);
      const [p, w, port] = [0, 1, 2].map((i) => plain(rd[i], 'SRV field'));
      if (![p, w, port].every((x) => /^\d+$/.test(x!)))
        throw new LineError('SRV priority, weight and port must be numbers');
      const target = plain(rd[3], 'target');
      return { destination: `${w} ${port} ${target === '.' ? '.' : absolute(target, origin)}`, priority: Number(p) };
    }
    case 'CAA': {
      want(type, rd, 3);
      const value = charString(rd[2]!);
      if (/["\\]/.test(value)) throw new LineError('CAA value may not contain quotes or backslashes');
      return { destination: `${plain(rd[0], 'flags')} ${plain(rd[1], 'tag')} "${value}"` };
    }
    case 'TXT': {
      if (rd.length === 0) throw new LineError('TXT record needs at least one character-string');
      const bytes = rd.flatMap((t) => unescapeCharString(t.text));
      return { destination: Buffer.from(bytes).toString('utf8') };
    }
    default:
      throw new LineError(`unsupported record type ${type}`);
  }
}

function platformFields(comment: string | null): Partial<RecordCreate> {
  const m = comment ? /^platform:\s*(\{.*\})\s*$/s.exec(comment) : null;
  if (!m) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(m[1]!);
  } catch {
    throw new LineError('the "; platform:" comment is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new LineError('the "; platform:" comment must hold a JSON object');
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(parsed)) {
    const want = META_FIELDS[k];
    if (!want) throw new LineError(`unknown field "${k}" in the "; platform:" comment`);
    if (typeof v !== want) throw new LineError(`field "${k}" in the "; platform:" comment must be a ${want}`);
    out[k] = v;
  }
  return out as Partial<RecordCreate>;
}

/**
 * Parses `text` as the master file of `zone` (lower case, no trailing dot), in one pass. Records and invalid lines
 * (together) and skipped lines are counted as they are read: reading stops as soon as either is past `maxRecords`.
 */
export function parseZoneFile(zone: string, text: string, maxRecords: number = LIMITS.importMaxRecords): ParseResult {
  const records: ParsedRecord[] = [];
  const rest = readZoneFile(zone, text, maxRecords, (line, input) => records.push({ line, input }));
  return { records, ...rest };
}

/**
 * parseZoneFile handing each record to `onRecord` as it is read, in file order, instead of collecting them: a caller
 * that turns each into something else (records/service.ts readImportFile builds it) keeps no parsed record.
 * `onRecord` must not throw.
 */
export function readZoneFile(
  zone: string,
  text: string,
  maxRecords: number,
  onRecord: (line: number, input: RecordCreate) => void,
): Omit<ParseResult, 'records'> {
  const result: Omit<ParseResult, 'records'> = { skipped: [], errors: [], tooLarge: false };
  let records = 0;
  const zoneAbs = `${zone}.`;
  let origin = zoneAbs;
  let defaultTtl: number | null = null;
  let lastTtl: number | null = null;
  let owner: string | null = null;

  for (const e of entriesOf(text)) {
    if (records + result.errors.length > maxRecords || result.skipped.length > maxRecords) {
      result.tooLarge = true;
      break;
    }
    if ('error' in e) {
      result.errors.push(e);
      continue;
    }
    try {
      const tokens = [...e.tokens];
      const first = tokens[0]!;
      if (!e.blankOwner && !first.quoted && first.text.startsWith('$')) {
        const directive = first.text.toUpperCase();
        if (directive === '$ORIGIN') origin = absolute(plain(tokens[1], '$ORIGIN name'), origin);
        else if (directive === '$TTL') {
          const ttl = parseTtl(plain(tokens[1], '$TTL value'));
          if (ttl === null) throw new LineError(`invalid $TTL "${tokens[1]!.text}"`);
          defaultTtl = ttl;
        } else throw new LineError(`directive ${first.text} is not supported`);
        continue;
      }
      if (!e.blankOwner) owner = absolute(plain(tokens.shift(), 'owner name'), origin);
      if (owner === null) throw new LineError('the first record has no owner name');
      let ttl: number | null = null;
      for (let k = 0; k < 2 && tokens.length; k++) {
        const t = tokens[0]!.text.toUpperCase();
        if (tokens[0]!.quoted) break;
        if (CLASSES.has(t)) {
          if (t !== 'IN') throw new LineError(`class ${t} is not supported; only IN`);
          tokens.shift();
        } else if (ttl === null && parseTtl(t) !== null && !(RECORD_TYPES as readonly string[]).includes(t)) {
          ttl = parseTtl(t);
          tokens.shift();
        } else break;
      }
      const type = plain(tokens.shift(), 'record type').toUpperCase();
      const isApex = owner === zoneAbs;
      if (type === 'SOA') {
        result.skipped.push({ line: e.line, reason: 'SOA is managed by the platform' });
        continue;
      }
      if (type === 'NS' && isApex) {
        result.skipped.push({ line: e.line, reason: 'NS records at the zone apex are managed by the platform' });
        continue;
      }
      if (ttl !== null) lastTtl = ttl;
      const { destination, priority } = destinationOf(type, tokens, origin);
      const input: RecordCreate = {
        name: owner,
        type,
        destination,
        ttl: ttl ?? defaultTtl ?? lastTtl ?? LIMITS.ttlDefault,
        ...(priority === undefined ? {} : { mx_priority: priority }),
        ...platformFields(e.comment),
      };
      records++;
      onRecord(e.line, input);
    } catch (err) {
      if (!(err instanceof LineError)) throw err;
      result.errors.push({ line: e.line, error: err.message });
    }
  }
  // The last entry read can be the one past the bound (the check above runs before each entry).
  if (records + result.errors.length > maxRecords || result.skipped.length > maxRecords) result.tooLarge = true;
  result.errors.sort((a, b) => a.line - b.line);
  return result;
}
