// OneRRset reads like the Map of its one RRset, OneAddress like the OneRRset of its A record; compactRRsets keeps what
// a Map held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TYPE } from '../wire/constants.js';
import type { RRset } from './model.js';
import { ipv4Number } from '../wire/rdata.js';
import { compactRRsets, NO_RRSETS, OneAddress, OneRRset } from './rrsets.js';

const set = (type: number): RRset => ({ type, ttl: 300, rdatas: [[Buffer.from([192, 0, 2, 1])]], targets: [] });

test('OneRRset answers every read as the Map of its RRset does', () => {
  const a = set(TYPE.A);
  const one = new OneRRset(a);
  const map = new Map<number, RRset>([[TYPE.A, a]]);
  for (const t of [TYPE.A, TYPE.AAAA, TYPE.CNAME, 0]) {
    assert.equal(one.get(t), map.get(t));
    assert.equal(one.has(t), map.has(t));
  }
  assert.equal(one.size, 1);
  assert.deepEqual([...one.keys()], [...map.keys()]);
  assert.deepEqual([...one.values()], [...map.values()]);
  assert.deepEqual([...one.entries()], [...map.entries()]);
  assert.deepEqual([...one], [...map]);
  assert.deepEqual(new Map(one), map);
  const seen: Array<[number, RRset]> = [];
  one.forEach((v, k, m) => {
    assert.equal(m, one);
    seen.push([k, v]);
  });
  assert.deepEqual(seen, [[TYPE.A, a]]);
});

test('compactRRsets: none → the shared empty map, one → OneRRset, several → the Map itself', () => {
  assert.equal(compactRRsets(new Map()), NO_RRSETS);
  const one = compactRRsets(new Map([[TYPE.TXT, set(TYPE.TXT)]]));
  assert.ok(one instanceof OneRRset);
  assert.equal(one.get(TYPE.TXT)?.type, TYPE.TXT);
  const two = new Map([
    [TYPE.A, set(TYPE.A)],
    [TYPE.AAAA, set(TYPE.AAAA)],
  ]);
  assert.equal(compactRRsets(two), two);
  assert.equal(NO_RRSETS.size, 0);
});

test('OneAddress reads like the OneRRset of the A record it holds, its RRset made once', () => {
  for (const [text, ttl] of [
    ['192.0.2.1', 300],
    ['255.255.255.255', 60],
    ['0.0.0.0', 0],
    ['128.0.0.1', 4294967295],
  ] as const) {
    const bytes = Buffer.from(text.split('.').map(Number));
    const held = new OneAddress(ttl, ipv4Number(text)!);
    const one = new OneRRset({ type: TYPE.A, ttl, rdatas: [[bytes]], targets: [] });
    assert.equal(held.type, TYPE.A);
    assert.equal(held.size, 1);
    assert.equal(held.has(TYPE.A), true);
    assert.equal(held.get(TYPE.AAAA), undefined);
    assert.deepEqual(held.get(TYPE.A), one.get(TYPE.A), text);
    assert.equal(held.get(TYPE.A), held.get(TYPE.A)); // one object: signatures and the journal are attached to it
    assert.deepEqual([...held], [...one]);
    assert.deepEqual([...held.keys()], [...one.keys()]);
    assert.equal([...held.values()][0], held.get(TYPE.A));
  }
});
