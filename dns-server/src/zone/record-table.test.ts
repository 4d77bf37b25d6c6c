// A builder's record table gives back every record as it was given, whether kept flat or as an object, through
// random writes, rewrites and removals (flat places reused); a flat record's content is what compiling it makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '@platform/shared/testing/prng';
import { compileOwner, ownerOf, type OwnerRecord } from './owner.js';
import { RecordTable } from './record-table.js';

const APEX = 'example.org';
const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8:ffff::1'] };

test('RecordTable: every record read back equal to the one written, its owner given back on removal', () => {
  const random = prng(11);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const table = new RecordTable(APEX);
  const want = new Map<number, OwnerRecord>();
  const owner = (r: OwnerRecord) => ownerOf(r, APEX);
  let flats = 0;
  for (let step = 0; step < 20000; step++) {
    const id = 1 + Math.floor(random() * 400);
    if (random() < 0.3) {
      const kept = want.get(id);
      assert.equal(table.delete(id, owner), kept === undefined ? undefined : owner(kept));
      want.delete(id);
    } else {
      const r: OwnerRecord = {
        id,
        // Flat only for a lower-case relative name: '@', upper case, a trailing dot and an invalid name stay objects.
        name: pick(['www', 'a.b', '*', `r${id}`, '@', 'WWW', 'x.', 'bad..name', '']),
        type: pick(['A', 'A', 'A', 'a', 'AAAA', 'TXT']),
        destination: pick([
          '192.0.2.1',
          '10.0.0.255',
          '255.255.255.255',
          '0.0.0.0',
          '010.0.0.1',
          ' 192.0.2.1',
          '1.2.3',
          'x',
        ]),
        ttl: pick([0, 60, 300, 4294967295, 1.5]),
        mxPriority: pick([0, 10, 65535]),
        proxied: random() < 0.2,
      };
      if (table.has(id)) table.delete(id, owner); // as the builder does: the old record out first
      table.set(r, owner(r));
      want.set(id, r);
    }
    if (step % 1000 === 0 || step === 19999) {
      assert.equal(table.size, want.size);
      assert.deepEqual(
        [...table.keys()].sort((a, b) => a - b),
        [...want.keys()].sort((a, b) => a - b),
      );
      for (const [k, r] of want) {
        assert.deepEqual(table.get(k), r, `record ${k} at step ${step}`);
        // A flat record's content, made without reading it back, is what compiling the record makes.
        const flat = table.flatContent(k);
        if (flat === undefined) continue;
        flats++;
        const compiled = compileOwner(owner(r)!, APEX, [r], EDGE);
        assert.deepEqual([...flat.rrsets], [...compiled.rrsets], `record ${k}`);
        assert.equal(flat.exists, compiled.exists);
        assert.deepEqual(flat.problems, compiled.problems);
      }
    }
  }
  assert.ok(flats > 100, `flat records seen ${flats}`);
});

test('RecordTable: a zone given in increasing id order (kept by id in an array), ids far apart, then rewritten and removed at random', () => {
  const random = prng(12);
  const table = new RecordTable(APEX);
  const want = new Map<number, OwnerRecord>();
  const owner = (r: OwnerRecord) => ownerOf(r, APEX);
  const record = (id: number): OwnerRecord => ({
    id,
    name: random() < 0.9 ? `r${id}` : 'WWW', // upper case: kept as an object
    type: random() < 0.95 ? 'A' : 'TXT',
    destination: `10.${id & 255}.${(id >> 8) & 255}.${random() < 0.5 ? 1 : 2}`,
    ttl: 300,
    mxPriority: 0,
    proxied: false,
  });
  const check = (when: string) => {
    assert.equal(table.size, want.size, when);
    assert.deepEqual(
      [...table.keys()].sort((a, b) => a - b),
      [...want.keys()].sort((a, b) => a - b),
      when,
    );
    for (const [k, r] of want) assert.deepEqual(table.get(k), r, `${when}: record ${k}`);
    for (const k of [0, 5, 999, 2 ** 40]) if (!want.has(k)) assert.equal(table.has(k), false, `${when}: ${k}`);
  };
  // Increasing ids (as a zone read whole is given: unheld), with gaps, a jump far above, and back near again.
  let id = 1000;
  for (let n = 0; n < 5000; n++) {
    id += n === 3000 ? 1_000_000_000 : 1 + Math.floor(random() * 3);
    const r = record(id);
    table.set(r, owner(r), true);
    want.set(id, r);
  }
  check('after the increasing ids');
  // Rewrites (flat ↔ object), removals and new ids, below, inside and above what was given.
  const ids = [...want.keys()];
  for (let step = 0; step < 8000; step++) {
    const k = random() < 0.7 ? ids[Math.floor(random() * ids.length)]! : Math.floor(random() * 20_000);
    if (random() < 0.3) {
      const kept = want.get(k);
      assert.equal(table.delete(k, owner), kept === undefined ? undefined : owner(kept));
      want.delete(k);
    } else {
      const r = record(k);
      table.set(r, owner(r));
      want.set(k, r);
    }
    if (step % 2000 === 0) check(`step ${step}`);
  }
  check('at the end');
  // Emptied, then filled again from another id on.
  for (const k of [...want.keys()]) table.delete(k, owner);
  want.clear();
  for (let k = 50; k < 60; k++) {
    const r = record(k);
    table.set(r, owner(r), true);
    want.set(k, r);
  }
  check('filled again');
});
