// `npm run bench [name...]`: runs the benchmarks one after another (each bounded), printing their tables.
// Names: records, records-pdns, dns-lookup, dns-zone-patch, dnsperf, dns-amplification, rules, normalise-path, cache-hit, cache-inventory, uptime-detect, attack-ingest, log-fields, analytics, analytics-backends, waf, waf-modsecurity, security-pipeline, wrk, distinct-hosts, propagation. Without names, all of them.
import { spawnSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsx = (file: string): string[] => [process.execPath, '--import', 'tsx', file];

const BENCHES: Record<string, string[]> = {
  records: tsx('bench/control-plane/records.bench.ts'),
  'records-pdns': tsx('bench/control-plane/vs-powerdns.ts'),
  'dns-lookup': tsx('bench/dns-server/lookup.bench.ts'),
  'dns-zone-patch': tsx('bench/dns-server/zone-patch.bench.ts'),
  dnsperf: tsx('bench/dns-server/dnsperf.ts'),
  'dns-amplification': tsx('bench/dns-server/amplification.ts'),
  rules: tsx('bench/edge-node/rules.bench.ts'),
  'normalise-path': tsx('bench/edge-node/normalise-path.bench.ts'),
  'cache-hit': tsx('bench/edge-node/cache-hit.bench.ts'),
  'cache-inventory': tsx('bench/edge-node/cache-inventory.ts'),
  'uptime-detect': tsx('bench/edge-node/uptime-detect.bench.ts'),
  'attack-ingest': tsx('bench/control-plane/attack-ingest.bench.ts'),
  'log-fields': tsx('bench/control-plane/log-fields.bench.ts'),
  analytics: tsx('bench/control-plane/analytics.bench.ts'),
  'analytics-backends': tsx('bench/control-plane/analytics-backends.bench.ts'),
  waf: tsx('bench/edge-node/waf.bench.ts'),
  'waf-modsecurity': tsx('bench/edge-node/waf-modsecurity.ts'),
  'security-pipeline': tsx('bench/edge-node/security-pipeline.bench.ts'),
  wrk: ['bash', 'bench/edge-node/wrk.sh'],
  tls: ['bash', 'bench/edge-node/tls.sh'],
  'distinct-hosts': tsx('bench/edge-node/distinct-hosts.ts'),
  propagation: tsx('bench/sync/propagation.ts'),
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !(n in BENCHES));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const name of wanted.length > 0 ? wanted : Object.keys(BENCHES)) {
  const [cmd, ...args] = BENCHES[name]!;
  console.log(`\n== ${name}: ${[cmd === process.execPath ? 'node' : cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd!, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`== ${name} failed (${r.status ?? r.signal})`);
  }
}
process.exit(failed > 0 ? 1 : 0);
