// The sync hub's mirror taking one large import: a delta of N records onto a domain's empty snapshot, as the control
// plane's import writes it. Prints the CPU from ingest to the entry nodes receive (what holds up the send), and the
// CPU of the compaction (squash) the mirror does after the send (compactDue; absent before it existed: the squash
// then ran inside ingest). Run: N=300000 ROUNDS=3 node --import tsx bench/sync/hub-ingest.ts
// BASE=k: the domain's snapshot holds k records before the delta (so the squash is not the delta itself).
import { loadavg } from 'node:os';
import { encodeDomainSnapshotFast } from '@platform/shared/config';
import { domainHeader, zoneRecord } from '@platform/shared/testing/config-entries';
import { LogMirror, type LogEntry } from '../../control-plane/src/sync/mirror.js';

const N = Number(process.env.N ?? 300_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const APEX = 'large.example';
const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const head = (version: number): Omit<LogEntry, 'payload'> => ({
  version,
  domainName: APEX,
  deleted: false,
  delta: false,
  removedRecordIds: [],
  removedRuleIds: [],
});
const BASE = Number(process.env.BASE ?? 0);
const h1 = domainHeader(APEX, 1);
const empty = encodeDomainSnapshotFast({
  ...h1,
  zone: { ...h1.zone, records: Array.from({ length: BASE }, (_, i) => zoneRecord(i + 10, `b${i}`, ip(i))) },
});
const h = domainHeader(APEX, 2);
const delta = encodeDomainSnapshotFast({
  ...h,
  zone: { ...h.zone, records: Array.from({ length: N }, (_, i) => zoneRecord(BASE + i + 10, `r${i}`, ip(i))) },
});
const cpu = (from: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1e6;
};
console.log(`delta of ${N} records: ${(delta.length / 1e6).toFixed(1)} MB; load ${loadavg().map((l) => l.toFixed(1))}`);
for (let round = 0; round < ROUNDS; round++) {
  const mirror = new LogMirror({ maxFrameBytes: 1 << 30, sendDeltas: true, onCompact: () => undefined });
  mirror.ingest([{ ...head(1), payload: empty }]);
  const c0 = process.cpuUsage();
  const out = mirror.ingest([{ ...head(2), delta: true, payload: delta }]);
  const toSend = cpu(c0);
  const c1 = process.cpuUsage();
  const m = mirror as unknown as { compactDue?: () => number };
  const compacted = m.compactDue?.();
  const after = cpu(c1);
  console.log(
    `round ${round + 1}: ingest → entry to send ${toSend.toFixed(2)} s CPU (${out.length} entry, ${(out[0]!.length / 1e6).toFixed(1)} MB); ` +
      `compaction after the send ${compacted === undefined ? '–' : `${after.toFixed(2)} s CPU (${compacted} domain)`}`,
  );
}
