// Fuzzing the query handler in-process: it never throws, and every answer is a well-formed response to its query.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Packet } from 'dns2';
import { answerQuery } from './handler.js';
import { createCounters } from './counters.js';
import { compileZone } from './zone/compile.js';
import { ZoneTable } from './zone/table.js';
import { sampleSnapshot } from './testing/fixtures.js';
import { fuzzPacket, prng } from './testing/mutate.js';

test('20,000 random and mutated packets: no throw; answers carry QR, the query ID, and decode', () => {
  const table = new ZoneTable();
  table.set(compileZone(sampleSnapshot(), { edgeIpv4: ['203.0.113.1'], edgeIpv6: [] }).zone!);
  const counters = createCounters();
  const rand = prng(20261122);
  let answered = 0;
  for (let i = 0; i < 20_000; i++) {
    const q = fuzzPacket(rand);
    const out = answerQuery(q, q.length, rand() < 0.2, table, counters);
    if (out === null) continue;
    answered++;
    assert.ok(out.length >= 12);
    assert.equal(out[2] & 0x80, 0x80, 'QR set');
    assert.equal(out.readUInt16BE(0), q.readUInt16BE(0), 'ID copied');
    if ((out[3] & 0xf) === 0 || (out[3] & 0xf) === 3)
      assert.doesNotThrow(() => Packet.parse(out), `decodes: ${q.toString('hex')}`);
  }
  assert.ok(answered > 5000, `answered ${answered}`);
});
