import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normaliseHost, parsePeerAddress } from '@platform/shared/match';
import { hostOf, peerOf } from './server.js';

const bytes = (b: number[]): ArrayBuffer => new Uint8Array(b).buffer;

test('peerOf reads uWS binary addresses as parsePeerAddress reads its text', () => {
  // IPv4, and IPv4 mapped into IPv6 (a listener on ::): counted as IPv4, one object per address.
  const v4 = peerOf(bytes([203, 0, 113, 7]));
  assert.deepEqual(v4, parsePeerAddress('203.0.113.7'));
  assert.equal(peerOf(bytes([203, 0, 113, 7])), v4);
  const mapped = peerOf(bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 198, 51, 100, 1]));
  assert.deepEqual(mapped, parsePeerAddress('198.51.100.1'));
  assert.deepEqual(mapped, parsePeerAddress('0000:0000:0000:0000:0000:ffff:c633:6401'));
  // Other IPv6: uWS's text form (eight groups of four hex digits), as getRemoteAddressAsText gives it.
  const v6 = peerOf(bytes([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd]));
  assert.deepEqual(v6, parsePeerAddress('2001:0db8:0000:0000:0000:0000:0000:abcd'));
  assert.equal(v6.text, '2001:0db8:0000:0000:0000:0000:0000:abcd');
  // A table slot taken by another address is replaced, never confused with it.
  for (let i = 0; i < 5000; i++) {
    const p = peerOf(bytes([10, (i >> 16) & 255, (i >> 8) & 255, i & 255]));
    assert.equal(p.text, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  }
  assert.deepEqual(peerOf(new ArrayBuffer(0)), parsePeerAddress(''));
});

/** hostOf as it was before its one-scan path: the reference it must agree with on every input. */
function hostOfReference(raw: string): string {
  let h = raw;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end > 0 ? h.slice(1, end) : h;
  } else {
    const colon = h.lastIndexOf(':');
    if (colon >= 0) h = h.slice(0, colon);
  }
  return normaliseHost(h);
}

test('hostOf gives what the bracket, port and normaliseHost steps give, on any Host value', () => {
  const fixed = [
    '',
    '.',
    'a.',
    'example.org',
    'Example.ORG',
    'example.org.',
    'example.org:8080',
    ' example.org ',
    '[::1]:443',
    '[2001:db8::1]',
    'a_b-c.d9',
    '\u0130nfo.org',
    'xn--bcher-kva.example',
    'example.org:',
    '-',
    '_',
  ];
  for (const h of fixed) assert.equal(hostOf(h), hostOfReference(h), JSON.stringify(h));
  // Random values over the characters that matter (seeded: the same cases every run).
  const chars = 'az09.-_:[] AZ\t\u0130\u00e9';
  let seed = 12345;
  const next = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  for (let i = 0; i < 20_000; i++) {
    let h = '';
    const len = next() % 12;
    for (let k = 0; k < len; k++) h += chars[next() % chars.length];
    assert.equal(hostOf(h), hostOfReference(h), JSON.stringify(h));
  }
});
