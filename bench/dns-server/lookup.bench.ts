// Micro-benchmark of the answer path on the seeded 10,000-record zone: the lookup alone, the whole handler
// (parse + lookup + copy + patch) with response rate limiting off and on (a rate never reached, so every answer
// pays the bookkeeping and is sent), the rate limiter alone, a Map-get-and-copy floor, and dns2's general codec.
// Run: node --import tsx bench/dns-server/lookup.bench.ts
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { Packet } from 'dns2';
import { compileZone } from '../../dns-server/src/zone/compile.js';
import { ZoneTable } from '../../dns-server/src/zone/table.js';
import { lookup } from '../../dns-server/src/zone/lookup.js';
import { answerQuery } from '../../dns-server/src/handler.js';
import { createCounters } from '../../dns-server/src/counters.js';
import { ResponseRateLimiter, RRL_CLASS } from '../../dns-server/src/rrl.js';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode } from '../../dns-server/src/testing/decode.js';
import { APEX, generateZone } from './zone-gen.js';

const TYPES: Record<string, number> = { A: 1, AAAA: 28, CNAME: 5, MX: 15, TXT: 16, SRV: 33, CAA: 257 };
const gen = generateZone(10_000, 1, 4096);
const t0 = performance.now();
const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] };
const compiled = compileZone(gen.snapshot, EDGE);
const compileMs = performance.now() - t0;
assert.deepEqual(compiled.problems, []);
const zone = compiled.zone!;
const table = new ZoneTable();
table.set(zone);
const counters = createCounters();
const queries = gen.queries.map((l) => {
  const [name, type] = l.split(' ');
  return { name, qtype: TYPES[type] };
});
const packets = queries.map((q, i) => buildQuery(q.name, q.qtype, { id: i }));

// Correctness before timing: existing names answer, the generated NXDOMAIN names do not.
for (const [i, q] of queries.entries()) {
  const d = decode(answerQuery(packets[i], packets[i].length, false, table, counters)!);
  assert.equal(d.rcode, q.name.startsWith('nx') ? 3 : 0, q.name);
  if (!q.name.startsWith('nx')) assert.ok(d.answer.length > 0, q.name);
}

// Client addresses as node:dgram reports them: 4096 clients in 256 /24s, and as many IPv6 ones.
const clients = Array.from({ length: 4096 }, (_, k) => `198.${(k >> 8) & 15}.${k & 255}.${(k * 7) & 255}`);
const clients6 = Array.from(
  { length: 4096 },
  (_, k) => `2001:db8:${(k >> 4).toString(16)}:${(k & 15).toString(16)}00::${k.toString(16)}`,
);
const rrl = new ResponseRateLimiter({ rate: 1_000_000, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, tableSize: 262144 });
for (const [k, p] of packets.entries())
  assert.ok(answerQuery(p, p.length, false, table, counters, rrl, clients[k]), 'RRL on, rate never reached: answered');

const fixed = answerQuery(packets[0], packets[0].length, false, table, counters)!;
const floorMap = new Map(queries.map((q) => [q.name, fixed]));
let i = 0;
const bench = new Bench({ time: 1500, warmupTime: 300 });
bench
  .add('lookup(zone, name, qtype)', () => {
    const q = queries[i++ & 4095];
    lookup(zone, q.name, q.qtype);
  })
  .add('answerQuery: parse + zone + lookup + copy/patch', () => {
    const p = packets[i++ & 4095];
    answerQuery(p, p.length, false, table, counters);
  })
  .add('answerQuery, RRL on (IPv4 clients, rate never reached)', () => {
    const k = i++ & 4095;
    const p = packets[k];
    answerQuery(p, p.length, false, table, counters, rrl, clients[k]);
  })
  .add('answerQuery, RRL on (IPv6 clients, rate never reached)', () => {
    const k = i++ & 4095;
    const p = packets[k];
    answerQuery(p, p.length, false, table, counters, rrl, clients6[k]);
  })
  .add('rrl.check alone (IPv4 client, name + type bucket)', () => {
    const k = i++ & 4095;
    rrl.check(clients[k], RRL_CLASS.POSITIVE, queries[k].name, queries[k].qtype);
  })
  .add('floor: Map.get + Buffer copy + ID patch', () => {
    const q = queries[i++ & 4095];
    const t = floorMap.get(q.name)!;
    const out = Buffer.allocUnsafe(t.length);
    t.copy(out);
    out[0] = 1;
  })
  .add('dns2: Packet.parse(query) + encode response', () => {
    const p = packets[i++ & 4095];
    const req = Packet.parse(p);
    const res = Packet.createResponseFromRequest(req);
    res.answers.push({ name: req.questions[0].name, type: 1, class: 1, ttl: 300, address: '10.0.0.1' } as never);
    res.toBuffer();
  });
await bench.run();

console.log(
  `zone ${APEX}: ${gen.records.length} records, ${zone.nodes.size} names, compiled in ${compileMs.toFixed(0)} ms; ${cpus()[0]?.model}, Node ${process.version}`,
);
console.table(bench.table());
