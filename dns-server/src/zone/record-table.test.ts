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
