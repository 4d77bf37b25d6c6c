// Writes the benchmark's domains into an edge node store (DATA_DIR/edge-node), as the sync client would:
// plain.bench.example.org (no rules), rules.bench.example.org (20 rules), cache.bench.example.org (a cache rule),
// waf.bench.example.org (the WAF's default rule), secure.bench.example.org (a rule of every security type:
// security-rules.ts); and writes the headers of the "every security type" row (the browser's, one `Name: value` a
// line) to DATA_DIR/security-headers for wrk's -H.
// Usage: node --import tsx bench/edge-node/wrk-setup.ts <DATA_DIR> <ORIGIN_PORT>
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openNodeStore } from '@platform/shared/node-store';
import { proxiedRecord, rule, snapshot } from '../../edge-node/src/testing/harness.js';
import { twentyRules } from './twenty-rules.js';
import { SECURITY_HEADERS, everySecurityType } from './security-rules.js';

const [dataDir, originPortText] = process.argv.slice(2);
const originPort = Number(originPortText);
if (!dataDir || !originPort) throw new Error('usage: wrk-setup.ts <DATA_DIR> <ORIGIN_PORT>');

const store = openNodeStore(join(dataDir, 'edge-node'));
const rec = (name: string) => proxiedRecord(name, originPort, { timeout: 30 });
let version = store.version;
for (const s of [
  snapshot('plain.bench.example.org', { records: [rec('@')] }),
  snapshot('rules.bench.example.org', { records: [rec('@')], rules: twentyRules(originPort) }),
  // the WAF's default protection as the API creates it (paranoia 1, threshold 5, enforced)
  snapshot('waf.bench.example.org', {
    records: [rec('@')],
    rules: [rule('waf', { priority: 1000, paranoia_level: 1, anomaly_threshold: 5 })],
  }),
  snapshot('secure.bench.example.org', { records: [rec('@')], rules: everySecurityType() }),
  snapshot('cache.bench.example.org', {
    records: [rec('@')],
    rules: [rule('cache', { path_includes: ['/static/*'], edge_ttl: 300 })],
    settings: { cacheCapMb: 100 },
  }),
])
  store.apply({ version: ++version, domain: s.name, deleted: false, snapshot: s });
await store.close();
writeFileSync(join(dataDir, 'security-headers'), SECURITY_HEADERS.map(([k, v]) => `${k}: ${v}\n`).join(''));
