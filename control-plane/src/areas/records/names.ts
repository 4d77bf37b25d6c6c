// Owner names (relative to the zone, '@' apex) and host names (record targets), per RFC 1035 §2.3.1 with
// the usual relaxations: underscores (RFC 8552 service labels) and a leading wildcard label (RFC 4592).
import { domainToASCII } from 'node:url';
import { isIPv4 } from 'node:net';
import { invalid } from './errors.js';

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/;

/** Why a dotted name (no trailing dot) is not a valid host name, or null when it is. */
function labelProblem(labels: string[], allowWildcard: boolean): string | null {
  for (let i = 0; i < labels.length; i++) {
    const label = labels[i]!;
    if (label.length === 0) return 'empty label';
    if (label.length > 63) return `label "${label.slice(0, 20)}…" is longer than 63 characters`;
    if (label === '*') {
      if (allowWildcard && i === 0) continue;
      return 'a wildcard "*" is allowed only as the whole leftmost label';
    }
    if (label.includes('*')) return 'a wildcard "*" is allowed only as the whole leftmost label';
    if (!LABEL.test(label))
      return `label "${label}" may hold only letters, digits, "-" and "_", and may not start or end with "-"`;
  }
  return null;
}

/** Lower case, IDN → punycode; keeps a trailing dot if there was one. */
function toAscii(raw: string): string {
  const s = raw.trim().toLowerCase();
  if (/^[\x21-\x7e]*$/.test(s)) return s;
  const trailing = s.endsWith('.');
  const ascii = domainToASCII(trailing ? s.slice(0, -1) : s);
  if (!ascii) throw invalid(`name "${raw}" is not a valid host name`);
  return trailing ? `${ascii}.` : ascii;
}

/**
 * Normalises a record's owner name to the stored form: relative to `zone`, lower case, '@' for the apex.
 * Accepted: '@', a relative name ('www', '*.dev'), the zone itself, a name ending in the zone with or
 * without a trailing dot. A name with a trailing dot is absolute and must lie inside the zone.
 */
export function normalizeOwnerName(zone: string, raw: string): string {
  const s = toAscii(raw);
  if (s === '') throw invalid('name must not be empty');
  if (s === '@' || s === zone || s === `${zone}.`) return '@';
  let relative: string;
  if (s.endsWith(`.${zone}.`)) relative = s.slice(0, -(zone.length + 2));
  else if (s.endsWith('.')) throw invalid(`name "${raw.trim()}" is not inside the zone ${zone}`);
  else if (s.endsWith(`.${zone}`)) relative = s.slice(0, -(zone.length + 1));
  else relative = s;
  const problem = labelProblem(relative.split('.'), true);
  if (problem) throw invalid(`name "${raw.trim()}" is not valid: ${problem}`);
  if (relative.length + 1 + zone.length > 253) throw invalid(`name "${raw.trim()}" is longer than 253 characters`);
  return relative;
}

/** The absolute name of a stored owner name. */
export function absoluteName(zone: string, name: string): string {
  return name === '@' ? zone : `${name}.${zone}`;
}

/**
 * Normalises a target host name (CNAME, MX, NS, PTR, SRV targets): absolute, lower case, no trailing dot.
 * Returns null when `raw` is not a host name. IPv4 literals are refused: a host name is wanted.
 */
export function normalizeHostName(raw: string): string | null {
  let s: string;
  try {
    s = toAscii(raw);
  } catch {
    return null;
  }
  if (s.endsWith('.')) s = s.slice(0, -1);
  if (s === '' || s.length > 253 || isIPv4(s)) return null;
  return labelProblem(s.split('.'), false) === null ? s : null;
}
