// Destination (RDATA) validation per record type, returning the stored presentation form.
// Stored forms: A dotted quad; AAAA RFC 5952 canonical; CNAME/NS/PTR/MX absolute host name without the
// trailing dot; TXT the raw text (unquoted, unescaped); SRV "weight port target" (priority in mx_priority);
// CAA `flags tag "value"`.
import { isIPv4, isIPv6 } from 'node:net';
import { invalid } from './errors.js';
import { normalizeHostName } from './names.js';
import { LIMITS, type RecordType } from './types.js';

export interface ParsedDestination {
  destination: string;
  /** SRV given in the four-field form "priority weight port target": the priority it carried. */
  priority?: number;
}

const CAA_TAGS = new Set(['issue', 'issuewild', 'iodef']);
const UINT16 = /^\d{1,5}$/;

function uint16(value: string, what: string): number {
  const n = UINT16.test(value) ? Number(value) : NaN;
  if (!(n >= 0 && n <= 65535)) throw invalid(`${what} must be between 0 and 65535`);
  return n;
}

/**
 * A TXT value given as one or more quoted strings (`"v=spf1" " -all"`, as dig prints it) is read in
 * presentation form and joined; anything else is taken literally.
 */
export function unquoteTxt(raw: string): string {
  const s = raw.trim();
  if (!/^"(?:[^"\\]|\\.)*"(?:\s+"(?:[^"\\]|\\.)*")*$/s.test(s)) return raw;
  const bytes: number[] = [];
  const re = /"((?:[^"\\]|\\.)*)"/gs;
  for (const m of s.matchAll(re)) bytes.push(...unescapeCharString(m[1]!));
  return Buffer.from(bytes).toString('utf8');
}

/** RFC 1035 §5.1 escapes: \X is X, \DDD is the byte DDD. Returns UTF-8 bytes. */
export function unescapeCharString(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      const ddd = s.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(ddd) && Number(ddd) <= 255) {
        out.push(Number(ddd));
        i += 3;
      } else {
        i += 1;
        out.push(...Buffer.from(s[i]!, 'utf8'));
      }
    } else {
      const cp = s.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      out.push(...Buffer.from(ch, 'utf8'));
      i += ch.length - 1;
    }
  }
  return out;
}

function hostFor(type: RecordType, raw: string): string {
  const host = normalizeHostName(raw);
  if (host === null) throw invalid(`${type} destination must be a host name`);
  return host;
}

/** `literalTxt`: the TXT value is already the final text (the zone-file parser unquoted it). */
export function parseDestination(
  type: RecordType,
  raw: string,
  opts: { literalTxt?: boolean } = {},
): ParsedDestination {
  const value = type === 'TXT' ? raw : raw.trim();
  if (value.trim() === '') throw invalid('destination must not be empty');
  switch (type) {
    case 'A':
      if (!isIPv4(value)) throw invalid('A destination must be an IPv4 address');
      return { destination: value };
    case 'AAAA': {
      if (!isIPv6(value) || value.includes('%')) throw invalid('AAAA destination must be an IPv6 address');
      return { destination: new URL(`http://[${value}]/`).hostname.slice(1, -1) };
    }
    case 'CNAME':
    case 'NS':
    case 'PTR':
    case 'MX':
      return { destination: hostFor(type, value) };
    case 'TXT': {
      const text = opts.literalTxt ? value : unquoteTxt(value);
      if (Buffer.byteLength(text, 'utf8') > LIMITS.txtMaxBytes)
        throw invalid(`TXT destination must be at most ${LIMITS.txtMaxBytes} bytes`);
      return { destination: text };
    }
    case 'SRV': {
      const parts = value.split(/\s+/);
      if (parts.length !== 3 && parts.length !== 4) throw invalid('SRV destination must be "weight port target"');
      const priority = parts.length === 4 ? uint16(parts.shift()!, 'SRV priority') : undefined;
      const weight = uint16(parts[0]!, 'SRV weight');
      const port = uint16(parts[1]!, 'SRV port');
      // RFC 2782: a target of "." means the service is decidedly not available here.
      const target = parts[2] === '.' ? '.' : normalizeHostName(parts[2]!);
      if (target === null) throw invalid('SRV target must be a host name or "."');
      return { destination: `${weight} ${port} ${target}`, ...(priority === undefined ? {} : { priority }) };
    }
    case 'CAA': {
      const m = /^(\S+)\s+(\S+)\s+(.+)$/s.exec(value);
      if (!m) throw invalid('CAA destination must be "flags tag value"');
      const flags = /^\d{1,3}$/.test(m[1]!) ? Number(m[1]) : NaN;
      if (!(flags >= 0 && flags <= 255)) throw invalid('CAA flags must be between 0 and 255');
      const tag = m[2]!.toLowerCase();
      if (!CAA_TAGS.has(tag)) throw invalid('CAA tag must be issue, issuewild or iodef');
      let v = m[3]!.trim();
      if (/^"(?:[^"\\]|\\.)*"$/s.test(v)) v = Buffer.from(unescapeCharString(v.slice(1, -1))).toString('utf8');
      // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
      if (/["\\\x00-\x1f\x7f]/.test(v))
        throw invalid('CAA value may not contain quotes, backslashes or control characters');
      if (tag === 'iodef' && !/^(mailto:|https?:\/\/)\S+$/.test(v))
        throw invalid('CAA iodef value must be a mailto:, http:// or https:// URL');
      if (tag !== 'iodef' && !/^[^\s;]*(\s*;.*)?$/s.test(v))
        throw invalid(`CAA ${tag} value must be an issuer domain name, optionally followed by "; parameters"`);
      return { destination: `${flags} ${tag} "${v}"` };
    }
  }
}
