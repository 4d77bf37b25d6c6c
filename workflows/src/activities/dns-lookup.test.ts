// Table tests of the ssl delegation judgement, and the DNS activities against the stub internet DNS.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStubDns, type StubDns } from '../../../test/helpers/stub-dns.js';
import { createDnsActivities, judgeAcmeDelegation } from './dns-lookup.js';

const INPUT = {
  domain: 'example.org',
  target: 'abc.acme.platform.test',
  canary: 'c1',
  delegationZone: 'acme.platform.test',
};
const seen = (values: string[], cname?: string) => ({ resolver: 'r', values, ...(cname ? { cname } : {}) });

const cases = [
  {
    name: 'every resolver sees the canary',
    obs: [seen(['c1'], 'abc.acme.platform.test'), seen(['c1'], 'abc.acme.platform.test')],
    ok: true,
  },
  {
    name: 'one of two',
    obs: [seen(['c1'], 'abc.acme.platform.test'), seen([])],
    error: 'not propagated yet: 1 of 2 resolvers see the delegation of _acme-challenge.example.org',
  },
  {
    name: "another domain's delegation",
    obs: [seen(['c2'], 'zzz.acme.platform.test')],
    error:
      '_acme-challenge.example.org points at zzz.acme.platform.test, the delegation of another domain; expected abc.acme.platform.test',
  },
  {
    name: 'CNAME elsewhere',
    obs: [seen([], 'other.example.net')],
    error: '_acme-challenge.example.org is a CNAME to other.example.net, expected abc.acme.platform.test',
  },
  {
    name: 'a TXT without the canary',
    obs: [seen(['x'])],
    error:
      'TXT at _acme-challenge.example.org holds "x", not this domain\'s canary (is the CNAME to abc.acme.platform.test in place?)',
  },
  {
    name: 'nothing',
    obs: [seen([])],
    error: 'no record at _acme-challenge.example.org: add a CNAME to abc.acme.platform.test',
  },
];
for (const c of cases) {
  test(`judgeAcmeDelegation: ${c.name}`, () => {
    assert.deepEqual(judgeAcmeDelegation(c.obs, INPUT), c.ok ? { ok: true } : { ok: false, error: c.error });
  });
}

let dns: StubDns;
before(async () => {
  dns = await startStubDns();
});
after(async () => {
  await dns.close();
});

test('lookups through the stub resolver: NS set, verification, zone scan (CNAME owns its label, apex NS skipped)', async () => {
  const a = createDnsActivities({ resolvers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000 });
  dns.delegate('example.org', ['NS2.platform.test.', 'ns1.platform.test']);
  dns.set('example.org', 'A', ['192.0.2.1']);
  dns.set('example.org', 'MX', ['5 mx.example.net']);
  dns.set('www.example.org', 'CNAME', ['example.org']);
  dns.set('shop.example.org', 'TXT', ['hello world']);
  assert.deepEqual(await a.lookupNameservers('example.org'), [
    { resolver: `127.0.0.1:${dns.port}`, values: ['ns1.platform.test', 'ns2.platform.test'] },
  ]);
  assert.deepEqual(await a.scanZone('example.org'), [
    { name: '@', type: 'A', destination: '192.0.2.1', ttl: 300 },
    { name: '@', type: 'MX', destination: 'mx.example.net', ttl: 300, mx_priority: 5 },
    { name: 'shop', type: 'TXT', destination: 'hello world', ttl: 300 },
    { name: 'www', type: 'CNAME', destination: 'example.org', ttl: 300 },
  ]);
  const v = { name: '_v.example.org', type: 'TXT', value: 'token-1' };
  assert.deepEqual(await a.lookupVerification({ verification: v, sslDelegation: null }), {
    found: null,
    seen: 'no TXT record at _v.example.org',
  });
  dns.set('_v.example.org', 'TXT', ['token-1']);
  assert.deepEqual(await a.lookupVerification({ verification: v, sslDelegation: null }), {
    found: 'txt',
    seen: 'TXT _v.example.org "token-1"',
  });
});

test('an unanswering resolver is reported as such, not as an empty answer', async () => {
  const a = createDnsActivities({ resolvers: [{ host: '127.0.0.1', port: 9 }], timeoutMs: 200 });
  const [obs] = await a.lookupNameservers('example.org');
  assert.deepEqual(obs.values, []);
  assert.ok(obs.error);
});
