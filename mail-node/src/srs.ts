// Sender Rewriting Scheme (SRS0) for forwarded mail: the envelope sender becomes an address of the forwarding domain,
// so the destination's SPF check sees our domain, and a bounce comes back to us carrying the original sender.
// SRS0=<hash>=<timestamp>=<original domain>=<original local part>@<forwarding domain>; the hash is the first 4
// characters of base64(HMAC-SHA256(secret, timestamp + domain + local)), lower-cased before hashing; the timestamp is
// days since the epoch mod 1024 in two base32 characters. reverse() checks both and refuses after 21 days.
import { createHmac, timingSafeEqual } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const MAX_AGE_DAYS = 21;

function timestamp(now: number): string {
  const days = Math.floor(now / 86_400_000) % 1024;
  return BASE32[days >> 5]! + BASE32[days & 31]!;
}

function hash(secret: string, ts: string, domain: string, local: string): string {
  return createHmac('sha256', secret).update(`${ts}${domain}${local}`.toLowerCase()).digest('base64').slice(0, 4);
}

/** The SRS0 form of `sender` for a message forwarded through `forwardingDomain`; the null sender stays null. */
export function srsForward(secret: string, sender: string, forwardingDomain: string, now = Date.now()): string {
  if (sender === '') return '';
  const at = sender.lastIndexOf('@');
  if (at <= 0) return sender;
  const local = sender.slice(0, at);
  const domain = sender.slice(at + 1);
  const ts = timestamp(now);
  return `SRS0=${hash(secret, ts, domain, local)}=${ts}=${domain}=${local}@${forwardingDomain}`;
}

/** The original sender an SRS0 address stands for, or undefined when it is not ours, forged or too old. */
export function srsReverse(secret: string, address: string, now = Date.now()): string | undefined {
  const at = address.lastIndexOf('@');
  const local = at > 0 ? address.slice(0, at) : address;
  const m = /^SRS0=([^=]{4})=([A-Z2-7]{2})=([^=]+)=(.+)$/i.exec(local);
  if (!m) return undefined;
  const [, h, ts, domain, origLocal] = m as unknown as [string, string, string, string, string];
  const expected = Buffer.from(hash(secret, ts.toUpperCase(), domain, origLocal));
  const given = Buffer.from(h);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  const then = BASE32.indexOf(ts[0]!.toUpperCase()) * 32 + BASE32.indexOf(ts[1]!.toUpperCase());
  const today = Math.floor(now / 86_400_000) % 1024;
  if ((today - then + 1024) % 1024 > MAX_AGE_DAYS) return undefined;
  return `${origLocal}@${domain}`;
}
