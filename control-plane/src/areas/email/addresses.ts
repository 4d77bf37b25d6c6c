// Email address rules: local parts of custom addresses and destination addresses, bounded and checked in linear time.

/** RFC 5321 limits: 64 octets of local part, 254 of a whole address. */
export const MAX_LOCAL_PART = 64;
export const MAX_ADDRESS = 254;

const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** A host name of at least two labels (no IP literal, no trailing dot), lower case. */
export function hostName(raw: string): Parsed<string> {
  const h = raw.toLowerCase().replace(/\.$/, '');
  if (h.length === 0 || h.length > 253) return { ok: false, error: 'the domain must be 1 to 253 characters' };
  const labels = h.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels[labels.length - 1]!))
    return { ok: false, error: `"${raw}" is not a domain name` };
  return { ok: true, value: h };
}

/** A local part (dot-atom, lower case), checked before any other work. */
export function localPart(raw: string): Parsed<string> {
  if (raw.length === 0 || raw.length > MAX_LOCAL_PART)
    return { ok: false, error: `an address's local part must be 1 to ${MAX_LOCAL_PART} characters` };
  const l = raw.toLowerCase();
  if (!LOCAL.test(l))
    return { ok: false, error: `"${raw}" is not a valid local part (letters, digits, . and !#$%&'*+/=?^_\`{|}~-)` };
  return { ok: true, value: l };
}

/** A whole address, `local@domain`, lower case. */
export function emailAddress(raw: string): Parsed<{ address: string; local: string; domain: string }> {
  if (raw.length === 0 || raw.length > MAX_ADDRESS)
    return { ok: false, error: `an email address must be 1 to ${MAX_ADDRESS} characters` };
  const at = raw.lastIndexOf('@');
  if (at <= 0) return { ok: false, error: `"${raw}" is not an email address` };
  const l = localPart(raw.slice(0, at));
  if (!l.ok) return l;
  const d = hostName(raw.slice(at + 1));
  if (!d.ok) return d;
  return { ok: true, value: { address: `${l.value}@${d.value}`, local: l.value, domain: d.value } };
}

/** A custom address of `zone`: a local part, or `local@zone` (another domain is refused). */
export function customAddress(raw: string, zone: string): Parsed<string> {
  if (raw.length > MAX_ADDRESS)
    return { ok: false, error: `an email address must be at most ${MAX_ADDRESS} characters` };
  if (!raw.includes('@')) return localPart(raw);
  const a = emailAddress(raw);
  if (!a.ok) return a;
  if (a.value.domain !== zone) return { ok: false, error: `the address must be at ${zone}` };
  return { ok: true, value: a.value.local };
}
