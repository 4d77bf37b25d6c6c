// Fuzzing the query handler in-process: it never throws, and every answer is a well-formed response to its query.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Packet } from 'dns2';
import { answerQuery } from './handler.js';
import { createCounters } from './counters.js';
import { compileZone } from './zone/compile.js';
import { ZoneTable } from './zone/table.js';
import { buildQuery, sampleSnapshot } from './testing/fixtures.js';
import { fuzzPacket, prng } from './testing/mutate.js';
import { makeDnssec } from './dnssec/testing.js';
import { TYPE } from './wire/constants.js';

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

test('a query without EDNS after a DO=1 one gets the unsigned answer: DO is not carried over', () => {
  const table = new ZoneTable();
  const snapshot = sampleSnapshot({ dnssec: makeDnssec() });
  table.set(compileZone(snapshot, { edgeIpv4: ['203.0.113.1'], edgeIpv6: [] }).zone!);
  const counters = createCounters();
  for (const [name, qtype] of [
    ['www.example.org', TYPE.A],
    ['nx.example.org', TYPE.A],
    ['www.example.org', TYPE.TXT],
  ] as const) {
    const plain = buildQuery(name, qtype);
    const before = answerQuery(plain, plain.length, false, table, counters);
    const signed = buildQuery(name, qtype, { edns: { do: true } });
    const withDo = answerQuery(signed, signed.length, false, table, counters)!;
    assert.ok(withDo.length > before!.length, `${name}: the DO=1 answer carries signatures`);
    assert.deepEqual(answerQuery(plain, plain.length, false, table, counters), before, `${name} ${qtype}`);
  }
});
