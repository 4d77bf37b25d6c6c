// Micro-benchmark of the DO=1 answer path (DNSSEC on) beside the unsigned one, in-process, on the seeded
// 10,000-record zone of the dnsperf bench: the whole handler (parse + zone + lookup + copy/patch) over the dnsperf
// query mix, over its NXDOMAIN tenth alone (names repeated, as a query file repeats them), over NXDOMAIN names never
// asked before (a random-name flood), and over NODATA at existing names.
// Run: node --import tsx bench/dns-server/dnssec-lookup.bench.ts
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { compileZone } from '../../dns-server/src/zone/compile.js';
import { ZoneTable } from '../../dns-server/src/zone/table.js';
import { answerQuery } from '../../dns-server/src/handler.js';
import { createCounters } from '../../dns-server/src/counters.js';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode } from '../../dns-server/src/testing/decode.js';
import { makeDnssec } from '../../dns-server/src/dnssec/testing.js';
import { APEX, generateZone } from './zone-gen.js';

const TYPES: Record<string, number> = { A: 1, AAAA: 28, CNAME: 5, MX: 15, TXT: 16, SRV: 33, CAA: 257 };
const gen = generateZone(10_000, 1, 4096);
const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] };
const tables = (['off', 'on'] as const).map((mode) => {
  const snapshot = mode === 'on' ? { ...gen.snapshot, dnssec: makeDnssec() } : gen.snapshot;
  const compiled = compileZone(snapshot, EDGE);
  assert.deepEqual(compiled.problems, []);
  const table = new ZoneTable();
  table.set(compiled.zone!);
  return table;
});
const [unsigned, signed] = tables;
const counters = createCounters();
const queries = gen.queries.map((l) => {
  const [name, type] = l.split(' ');
  return { name, qtype: TYPES[type] };
});
const plain = queries.map((q, i) => buildQuery(q.name, q.qtype, { id: i }));
const withDo = queries.map((q, i) => buildQuery(q.name, q.qtype, { id: i, edns: { do: true } }));
const nx = withDo.filter((_, i) => queries[i].name.startsWith('nx'));
const nxPlain = plain.filter((_, i) => queries[i].name.startsWith('nx'));
// NODATA: a type the name does not have (TXT at A names, A at the others).
const nodata = queries
  .filter((q) => !q.name.startsWith('nx') && q.qtype !== TYPES.CNAME)
  .map((q, i) => buildQuery(q.name, q.qtype === TYPES.TXT ? TYPES.A : TYPES.TXT, { id: i, edns: { do: true } }));
// Fresh names: a new one per call (the counter written into the label), never asked before.
const fresh = buildQuery(`nx000000000.${APEX}`, TYPES.A, { edns: { do: true } });
let serial = 0;
function nextFresh(): Buffer {
  let n = serial++;
  for (let p = 12 + 3 + 8; p >= 15; p--, n = Math.floor(n / 10)) fresh[p] = 0x30 + (n % 10);
  return fresh;
}

// Correctness before timing: signed answers carry RRSIGs, NXDOMAIN its NSEC3 proof.
for (const [i, p] of withDo.entries()) {
  const d = decode(answerQuery(p, p.length, false, signed, counters)!);
  const isNx = queries[i].name.startsWith('nx');
  assert.equal(d.rcode, isNx ? 3 : 0, queries[i].name);
  if (isNx) assert.ok(d.authority.filter((r) => r.split(' ')[2] === '50').length >= 2, queries[i].name);
  else
    assert.ok(
      d.answer.some((r) => r.split(' ')[2] === '46'),
      queries[i].name,
    );
}

let i = 0;
const bench = new Bench({ time: 1500, warmupTime: 300 });
const ask = (table: ZoneTable, set: Buffer[]) => () => {
  const p = set[i++ % set.length];
  answerQuery(p, p.length, false, table, counters);
};
bench
  .add('unsigned, no DO: query mix', ask(unsigned, plain))
  .add('signed, DO=1: query mix', ask(signed, withDo))
  .add('unsigned, no DO: NXDOMAIN (names of the query file)', ask(unsigned, nxPlain))
  .add('signed, DO=1: NXDOMAIN (names of the query file)', ask(signed, nx))
  .add('signed, DO=1: NXDOMAIN, a name never asked before', () => {
    const p = nextFresh();
    answerQuery(p, p.length, false, signed, counters);
  })
  .add('signed, DO=1: NODATA at existing names', ask(signed, nodata));
await bench.run();

console.log(`zone ${APEX}: ${gen.records.length} records; ${cpus()[0]?.model}, Node ${process.version}`);
console.table(bench.table());
