// Micro-benchmark of basic_auth's verdict per request (issue 19, the edge sso requirement): a signed-in browser's
// edge session cookie (sso) against the anchor, a Basic Authorization header already verified (scrypt ran once), and
// a rule without an sso block (what every other basic_auth host pays for the sso check: one null test). The sso rows
// take a realistic Cookie header (analytics cookies before ours); "new value" is a cookie not in the verified table
// yet (an HMAC), the steady state is a remembered one (string compares).
// Run: node --import tsx bench/edge-node/sso.bench.ts
import { loadavg } from 'node:os';
import { Bench } from 'tinybench';
import { compileBasicAuth, isAuthorized } from '../../edge-node/src/rules/basic-auth.js';
import { configureSso, sessionValue, SSO_COOKIE, ssoVerdict } from '../../edge-node/src/rules/sso.js';
import type { RuleBody } from '@platform/shared/match';
import { printAgainstAnchor } from './rule-gen.js';

const HOST = 'app.bench.example';
configureSso({ controlPlaneUrl: undefined, browserUrl: undefined }, 'bench secret', '');
const basic = compileBasicAuth({ users: [] } as unknown as RuleBody, { id: 1 });
const header = `Basic ${Buffer.from('robot:robot password 1').toString('base64')}`;
// The anchor's steady state: the header already verified (isAuthorized remembers it after one scrypt check).
basic.verified.add(header);
const sso = {
  emails: new Set(Array.from({ length: 100 }, (_, i) => `user${i}@bench.example`)),
  ttlS: 3600,
};
const other = '_ga=GA1.2.1234567890.1700000000; _gid=GA1.2.987654321.1700000000; theme=dark';
const cookie = `${other}; ${SSO_COOKIE}=${sessionValue('user42@bench.example', HOST)}`;
// 4 values per slot of the verified table (16,384): a value is almost never still there when it comes round again.
const FRESH = 65536;
const fresh = Array.from(
  { length: FRESH },
  (_, i) =>
    `${other}; ${SSO_COOKIE}=${sessionValue(`user${i % 100}@bench.example`, HOST, Date.now() - (i % 3000) * 1000)}`,
);

let k = 0;
let sink = 0;
const bench = new Bench({ time: 800, warmupTime: 200 });
bench.add('anchor: Basic, header already verified', () => {
  sink += isAuthorized(basic, header, '192.0.2.1') === true ? 1 : 0;
});
bench.add('rule without sso: the null check', () => {
  sink += basic.sso === null ? 1 : 0;
});
bench.add('sso: remembered session cookie', () => {
  sink += ssoVerdict(sso, cookie, HOST) === 'pass' ? 1 : 0;
});
bench.add('sso: new cookie value (HMAC)', () => {
  sink += ssoVerdict(sso, fresh[k++ & (FRESH - 1)], HOST) === 'pass' ? 1 : 0;
});
await bench.run();
console.log(`load ${loadavg()[0].toFixed(1)} (sink ${sink > 0})`);
printAgainstAnchor(bench);
