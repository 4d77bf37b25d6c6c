// Domain names as stored: IDN → punycode, lower case, no trailing dot; anything that is not a registrable host name is refused.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { ApiError } from '../../errors.js';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Why `raw` is not an acceptable domain name, or the normalised name. */
export function parseDomainName(raw: string): { ok: true; name: string } | { ok: false; reason: string } {
  let text = raw.trim();
  if (/%[0-9a-f]{2}/i.test(text)) {
    try {
      text = decodeURIComponent(text);
    } catch {
      return { ok: false, reason: 'bad percent-encoding' };
    }
  }
  if (text.endsWith('.')) text = text.slice(0, -1);
  if (text === '') return { ok: false, reason: 'the name is empty' };
  if (isIP(text) || isIP(text.replace(/^\[|\]$/g, '')))
    return { ok: false, reason: 'an IP address is not a domain name' };
  if (/[\s/\\@:?#*]/.test(text)) return { ok: false, reason: 'the name holds characters not allowed in a host name' };
  // Checked before domainToASCII, which takes a numeric last label for an IPv4 address and just fails.
  if (/\.[0-9]+$/.test(text)) return { ok: false, reason: 'the top-level label cannot be numeric' };
  const ascii = domainToASCII(text.toLowerCase());
  if (!ascii) return { ok: false, reason: 'the name is not a valid internationalised domain name' };
  // The WHATWG host parser reads a single number (`0`, `0x7f`, `3232235777`) as an IPv4 address.
  if (isIP(ascii)) return { ok: false, reason: 'an IP address is not a domain name' };
  if (ascii.length > 253) return { ok: false, reason: 'the name is longer than 253 characters' };
  const labels = ascii.split('.');
  if (labels.length < 2) return { ok: false, reason: 'a single label is not a domain name' };
  for (const label of labels) {
    if (label.length === 0) return { ok: false, reason: 'the name has an empty label' };
    if (label.length > 63) return { ok: false, reason: `label "${label.slice(0, 20)}…" is longer than 63 characters` };
    if (!LABEL.test(label))
      return { ok: false, reason: `label "${label}" may hold only letters, digits and inner hyphens` };
  }
  return { ok: true, name: ascii };
}

/** The normalised name, or ApiError 400 `invalid domain name "x": reason`. */
export function normalizeDomainName(raw: string): string {
  const r = parseDomainName(raw);
  if (!r.ok) throw new ApiError('CP_ERR_INVALID_INPUT', `invalid domain name "${raw.slice(0, 300)}": ${r.reason}`);
  return r.name;
}

/**
 * The domain names a host may belong to: itself, then each parent of two labels or more (a.b.example.com →
 * a.b.example.com, b.example.com, example.com). A domain is never a single label, so the top-level one is left out.
 */
export function enclosingNames(host: string): string[] {
  const out = [host];
  for (let i = host.indexOf('.'); i >= 0; i = host.indexOf('.', i + 1)) {
    const rest = host.slice(i + 1);
    if (rest.includes('.')) out.push(rest);
  }
  return out;
}
