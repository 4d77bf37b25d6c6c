// parseRdata's in-place IPv4 reader (ipv4Bytes) takes only addresses isIPv4 takes, and reads the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isIPv4 } from 'node:net';
import { TYPE } from './constants.js';
import { ipv4Bytes, parseRdata } from './rdata.js';

/** A deterministic generator (no Math.random: a failure repeats). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

test('ipv4Bytes accepts a subset of isIPv4 and reads the same bytes; parseRdata answers as before for every input', () => {
  const next = rng(17);
  const pieces = [
    '0',
    '1',
    '9',
    '10',
    '01',
    '00',
    '99',
    '100',
    '199',
    '255',
    '256',
    '300',
    '999',
    '1000',
    '',
    ' ',
    'a',
    '-1',
    '+1',
    '٣',
  ];
  const inputs = ['192.0.2.1', '0.0.0.0', '255.255.255.255', '1.2.3', '1.2.3.4.5', '1..2.3', '.1.2.3', '1.2.3.', ''];
  for (let k = 0; k < 20000; k++) {
    const parts = 3 + Math.floor(next() * 3);
    const ps: string[] = [];
    for (let i = 0; i < parts; i++)
      ps.push(next() < 0.7 ? String(Math.floor(next() * 300)) : pieces[Math.floor(next() * pieces.length)]!);
    inputs.push(ps.join(next() < 0.95 ? '.' : ':'));
  }
  let fast = 0;
  for (const s of inputs) {
    const b = ipv4Bytes(s);
    if (b !== null) {
      fast++;
      assert.ok(isIPv4(s), s);
      assert.deepEqual([...b], s.split('.').map(Number), s);
    }
    const parsed = parseRdata(TYPE.A, s, 0, 'example.com');
    if (isIPv4(s.trim())) {
      assert.ok(typeof parsed !== 'string', s);
      assert.deepEqual([...(parsed.rdata[0] as Buffer)], s.trim().split('.').map(Number), s);
    } else assert.equal(parsed, `invalid IPv4 address "${s.trim()}"`);
  }
  assert.ok(fast > 1000, `fast path taken ${fast} times`);
});
