// OneRRset reads like the Map of its one RRset; compactRRsets keeps what a Map held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TYPE } from '../wire/constants.js';
import type { RRset } from './model.js';
import { compactRRsets, NO_RRSETS, OneRRset } from './rrsets.js';

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
