// Seeded generator of the benchmark zone (records, BIND zone file, DomainSnapshot) and its dnsperf query file.
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
// mulberry32, so every run benchmarks the same zone and queries.
import { prng } from '@platform/shared/testing/prng';
import { zoneRecord } from '@platform/shared/testing/config-entries';

export const APEX = 'bench.example';
export const NAMESERVERS = ['ns1.platform.test', 'ns2.platform.test'];

export interface BenchZone {
  records: ZoneRecord[];
  snapshot: DomainSnapshot;
  zoneFile: string;
  /** dnsperf input lines: "name TYPE". */
  queries: string[];
}

export function generateZone(count = 10_000, seed = 1, queryCount = 20_000): BenchZone {
  const rand = prng(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const records: ZoneRecord[] = [];
  const aNames: string[] = [];
  const rec = (name: string, type: string, destination: string, mxPriority = 0): void => {
    records.push({ ...zoneRecord(records.length + 1, name, destination, type), mxPriority });
  };
  for (let i = 0; records.length < count; i++) {
    const name = i % 7 === 0 ? `h${i}.g${i % 50}` : `h${i}`;
    const roll = rand();
    if (roll < 0.45 || aNames.length < 10) {
      rec(name, 'A', `10.${int(256)}.${int(256)}.${1 + int(254)}`);
      aNames.push(name);
    } else if (roll < 0.6) rec(name, 'AAAA', `2001:db8:${int(65536).toString(16)}::${(1 + int(65535)).toString(16)}`);
    else if (roll < 0.7) rec(name, 'CNAME', `${aNames[int(aNames.length)]}.${APEX}`);
    else if (roll < 0.8) rec(name, 'MX', `${aNames[int(aNames.length)]}.${APEX}`, 10 + int(20));
    else if (roll < 0.9) rec(name, 'TXT', `v=spf1 ip4:10.${int(256)}.0.0/16 -all id=${i}`);
    else if (roll < 0.95)
      rec(
        `_svc._tcp.${name}`,
        'SRV',
        `${int(100)} ${1024 + int(60000)} ${aNames[int(aNames.length)]}.${APEX}`,
        int(10),
      );
    else rec(name, 'CAA', '0 issue "ca.example.net"');
  }
  const snapshot: DomainSnapshot = {
    schemaMajor: 1,
    domainId: 1,
    name: APEX,
    state: 'active',
    dnsMode: 'managed',
    zone: {
      serial: 1,
      nameservers: NAMESERVERS,
      soaMname: NAMESERVERS[0],
      soaRname: `hostmaster.${APEX}`,
      soaRefresh: 10000,
      soaRetry: 2400,
      soaExpire: 604800,
      soaMinimum: 300,
      soaTtl: 3600,
      records,
    },
    settings: { developerMode: false, developerModeExpiresAtMs: 0, cacheL2TtlDays: 1, cacheCapMb: 0 },
    ruleSet: { version: 0, rules: [] },
    certificates: [],
  };
  const lines = [
    `$ORIGIN ${APEX}.`,
    '$TTL 3600',
    `@ 3600 IN SOA ${NAMESERVERS[0]}. hostmaster.${APEX}. 1 10000 2400 604800 300`,
    ...NAMESERVERS.map((n) => `@ 3600 IN NS ${n}.`),
  ];
  for (const r of records) {
    const rdata =
      r.type === 'MX'
        ? `${r.mxPriority} ${r.destination}.`
        : r.type === 'SRV'
          ? `${r.mxPriority} ${r.destination}.`
          : r.type === 'CNAME'
            ? `${r.destination}.`
            : r.type === 'TXT'
              ? `"${r.destination}"`
              : r.destination;
    lines.push(`${r.name} ${r.ttl} IN ${r.type} ${rdata}`);
  }
  const queries: string[] = [];
  for (let i = 0; i < queryCount; i++) {
    if (rand() < 0.1) {
      queries.push(`nx${int(1e9)}.${APEX} A`);
      continue;
    }
    const r = records[int(records.length)];
    queries.push(`${r.name}.${APEX} ${r.type}`);
  }
  return { records, snapshot, zoneFile: lines.join('\n') + '\n', queries };
}
