// Micro-benchmark of the request-log fields' per-record work (issue 15 item 3): the GeoIP lookup at ingest (country,
// AS number and organisation, control-plane/src/areas/analytics/geo.ts) next to the anchor, geoip-country's lookup
// (country only; the package origin_route rules already use), and the edge's user-agent category
// (edge-node/src/log/ua-category.ts) next to the anchor, lower-casing the same header once. Addresses: 1,000 spread
// over the IPv4 space, 1,000 IPv6 in 2000::/3. User agents: 1,000 distinct (the memo never hits) and 20 repeating.
// Run: node --import tsx bench/control-plane/log-fields.bench.ts
import { cpus } from 'node:os';
import geoip from 'geoip-country';
import { Bench } from 'tinybench';
import { geoDatabases, lookupClient } from '../../control-plane/src/areas/analytics/geo.js';
import { userAgentCategory } from '../../edge-node/src/log/ua-category.js';
import { lcg } from '../../control-plane/src/areas/analytics/test-log.js';

const r = lcg(99);
const v4 = Array.from({ length: 1000 }, () =>
  [1 + Math.floor(r() * 222), Math.floor(r() * 256), Math.floor(r() * 256), Math.floor(r() * 256)].join('.'),
);
const hex = () => Math.floor(r() * 65536).toString(16);
const v6 = Array.from({ length: 1000 }, () => `2${hex().slice(0, 3).padStart(3, '0')}:${hex()}:${hex()}::${hex()}`);
const browsers = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'curl/8.5.0',
];
const distinct = Array.from(
  { length: 1000 },
  (_, i) => `${browsers[i % browsers.length]} build/${i}.${Math.floor(r() * 1e9)}`,
);
const repeating = Array.from({ length: 20 }, (_, i) => browsers[i % browsers.length]);
let u = 0;
// Both databases read before timing (a process reads them once).
geoDatabases();
geoip.lookup('8.8.8.8');

const bench = new Bench({ time: 1000, warmupTime: 200 });
bench.add('anchor: geoip-country lookup, 1000 IPv4', () => {
  for (const a of v4) geoip.lookup(a);
});
bench.add('lookupClient (country + AS), 1000 IPv4', () => {
  for (const a of v4) lookupClient(a);
});
bench.add('anchor: geoip-country lookup, 1000 IPv6', () => {
  for (const a of v6) geoip.lookup(a);
});
bench.add('lookupClient (country + AS), 1000 IPv6', () => {
  for (const a of v6) lookupClient(a);
});
let sink = 0;
bench.add('anchor: toLowerCase of 1000 distinct user agents', () => {
  u++;
  for (const ua of distinct) sink += `${ua}.${u}`.toLowerCase().length;
});
bench.add('userAgentCategory, 1000 distinct (no memo hit)', () => {
  // A new suffix each round: the memo never answers.
  u++;
  for (const ua of distinct) userAgentCategory(`${ua}.${u}`);
});
bench.add('userAgentCategory, 1000 of 20 repeating (memo)', () => {
  for (let i = 0; i < 1000; i++) userAgentCategory(repeating[i % 20]);
});
await bench.run();
console.table(bench.table());
if (sink < 0) console.log(sink);
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
