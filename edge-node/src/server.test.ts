import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress } from '@platform/shared/match';
import { peerOf } from './server.js';

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
