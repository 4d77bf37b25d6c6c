// Table tests of the record table's field rules, owner names and destinations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyPatch, buildRecord, normalizeScheme } from './normalize.js';
import type { RecordCreate } from './types.js';

const ZONE = 'example.org';
const make = (extra: Partial<RecordCreate>): RecordCreate => ({
  name: 'www',
  type: 'A',
  destination: '192.0.2.1',
  ...extra,
});

const ok: { name: string; input: Partial<RecordCreate>; want: Record<string, unknown> }[] = [
  {
    name: 'defaults',
    input: {},
    want: {
      name: 'www',
      ttl: 120,
      proxied: false,
      scheme: 'Auto',
      port: 443,
      timeout: 60,
      hostHeaderMode: 'own',
      comment: null,
      hostHeader: null,
      mxPriority: null,
    },
  },
  { name: 'apex @', input: { name: '@' }, want: { name: '@' } },
  { name: 'zone name is apex', input: { name: 'Example.ORG.' }, want: { name: '@' } },
  { name: 'fqdn inside zone', input: { name: 'WWW.example.org.' }, want: { name: 'www' } },
  { name: 'fqdn inside zone without dot', input: { name: 'a.b.example.org' }, want: { name: 'a.b' } },
  { name: 'wildcard leftmost', input: { name: '*.dev' }, want: { name: '*.dev' } },
  { name: 'idn to punycode', input: { name: 'bücher' }, want: { name: 'xn--bcher-kva' } },
  {
    name: 'underscore label',
    input: { name: '_dmarc', type: 'TXT', destination: 'v=DMARC1; p=none' },
    want: { name: '_dmarc', destination: 'v=DMARC1; p=none' },
  },
  { name: 'ttl max', input: { ttl: 604800 }, want: { ttl: 604800 } },
  { name: 'ttl min', input: { ttl: 1 }, want: { ttl: 1 } },
  { name: 'proxied forces ttl 120', input: { ttl: 3600, proxied: true }, want: { ttl: 120, proxied: true } },
  {
    name: 'aaaa canonical',
    input: { type: 'AAAA', destination: '2001:DB8:0:0:0:0:0:1' },
    want: { destination: '2001:db8::1' },
  },
  {
    name: 'cname lower, no dot',
    input: { type: 'CNAME', destination: 'Origin.Example.NET.' },
    want: { destination: 'origin.example.net' },
  },
  {
    name: 'cname proxied',
    input: { type: 'CNAME', destination: 'origin.example.net', proxied: true },
    want: { proxied: true },
  },
  { name: 'mx default priority', input: { type: 'MX', destination: 'mail.example.org' }, want: { mxPriority: 10 } },
  {
    name: 'mx priority max',
    input: { type: 'MX', destination: 'mail.example.org', mx_priority: 65535 },
    want: { mxPriority: 65535 },
  },
  { name: 'mx_priority ignored on A', input: { mx_priority: 5 }, want: { mxPriority: null } },
  {
    name: 'srv three fields',
    input: { name: '_sip._tcp', type: 'SRV', destination: '5 5060 SIP.example.org.', mx_priority: 1 },
    want: { destination: '5 5060 sip.example.org', mxPriority: 1 },
  },
  {
    name: 'srv four fields',
    input: { name: '_sip._tcp', type: 'SRV', destination: '7 5 5060 sip.example.org' },
    want: { destination: '5 5060 sip.example.org', mxPriority: 7 },
  },
  {
    name: 'caa unquoted',
    input: { type: 'CAA', destination: '0 ISSUE letsencrypt.org' },
    want: { destination: '0 issue "letsencrypt.org"' },
  },
  {
    name: 'caa iodef',
    input: { type: 'CAA', destination: '128 iodef "mailto:sec@example.org"' },
    want: { destination: '128 iodef "mailto:sec@example.org"' },
  },
  { name: 'txt literal', input: { type: 'TXT', destination: 'hello "world"' }, want: { destination: 'hello "world"' } },
  {
    name: 'txt quoted strings joined',
    input: { type: 'TXT', destination: '"v=spf1 " "-all"' },
    want: { destination: 'v=spf1 -all' },
  },
  {
    name: 'ns below apex',
    input: { name: 'sub', type: 'NS', destination: 'ns1.example.net' },
    want: { destination: 'ns1.example.net' },
  },
  { name: 'ptr', input: { type: 'PTR', destination: 'host.example.org.' }, want: { destination: 'host.example.org' } },
  { name: 'type lower case', input: { type: 'a' }, want: { type: 'A' } },
  { name: 'comment empty removes', input: { comment: '' }, want: { comment: null } },
  { name: 'comment 1024', input: { comment: 'x'.repeat(1024) }, want: { comment: 'x'.repeat(1024) } },
  { name: 'host_header empty removes', input: { host_header: '' }, want: { hostHeader: null } },
  { name: 'host_header set', input: { host_header: 'Origin.example.net' }, want: { hostHeader: 'origin.example.net' } },
  { name: 'host_header_mode target', input: { host_header_mode: 'target' }, want: { hostHeaderMode: 'target' } },
  { name: 'timeout bounds', input: { timeout: 1800 }, want: { timeout: 1800 } },
];
for (const c of ok) {
  test(`record ok: ${c.name}`, () => {
    const r = buildRecord(ZONE, make(c.input));
    for (const [k, v] of Object.entries(c.want)) assert.deepEqual((r as unknown as Record<string, unknown>)[k], v, k);
  });
}

const bad: { name: string; input: Partial<RecordCreate>; error: string; status?: number }[] = [
  { name: 'ttl 0', input: { ttl: 0 }, error: 'ttl must be between 1 and 604800' },
  { name: 'ttl too big', input: { ttl: 604801 }, error: 'ttl must be between 1 and 604800' },
  {
    name: 'mx priority too big',
    input: { type: 'MX', destination: 'mail.example.org', mx_priority: 65536 },
    error: 'mx_priority must be between 0 and 65535',
  },
  {
    name: 'mx priority negative',
    input: { type: 'MX', destination: 'mail.example.org', mx_priority: -1 },
    error: 'mx_priority must be between 0 and 65535',
  },
  { name: 'timeout 0', input: { timeout: 0 }, error: 'timeout must be between 1 and 1800' },
  { name: 'timeout 1801', input: { timeout: 1801 }, error: 'timeout must be between 1 and 1800' },
  { name: 'comment 1025', input: { comment: 'x'.repeat(1025) }, error: 'comment must be at most 1024 characters' },
  {
    name: 'host_header_mode',
    input: { host_header_mode: 'other' },
    error: 'host_header_mode must be one of: own, target',
  },
  { name: 'host_header not a host', input: { host_header: 'a b' }, error: 'host_header must be a host name' },
  {
    name: 'unknown type',
    input: { type: 'HINFO' },
    error: 'type must be one of A, AAAA, CNAME, MX, TXT, NS, SRV, CAA, PTR',
  },
  { name: 'a not ipv4', input: { destination: '300.1.1.1' }, error: 'A destination must be an IPv4 address' },
  { name: 'a ipv6', input: { destination: '::1' }, error: 'A destination must be an IPv4 address' },
  {
    name: 'aaaa ipv4',
    input: { type: 'AAAA', destination: '192.0.2.1' },
    error: 'AAAA destination must be an IPv6 address',
  },
  {
    name: 'cname ip',
    input: { type: 'CNAME', destination: '192.0.2.1' },
    error: 'CNAME destination must be a host name',
  },
  {
    name: 'mx bad host',
    input: { type: 'MX', destination: 'mail server' },
    error: 'MX destination must be a host name',
  },
  {
    name: 'ns bad host',
    input: { name: 'sub', type: 'NS', destination: '-bad.example' },
    error: 'NS destination must be a host name',
  },
  { name: 'ptr bad host', input: { type: 'PTR', destination: 'a..b' }, error: 'PTR destination must be a host name' },
  { name: 'empty destination', input: { destination: '  ' }, error: 'destination must not be empty' },
  {
    name: 'txt too long',
    input: { type: 'TXT', destination: 'x'.repeat(2049) },
    error: 'TXT destination must be at most 2048 bytes',
  },
  {
    name: 'srv shape',
    input: { type: 'SRV', destination: '5060 sip.example.org' },
    error: 'SRV destination must be "weight port target"',
  },
  {
    name: 'srv port',
    input: { type: 'SRV', destination: '5 70000 sip.example.org' },
    error: 'SRV port must be between 0 and 65535',
  },
  {
    name: 'caa tag',
    input: { type: 'CAA', destination: '0 issuer "x"' },
    error: 'CAA tag must be issue, issuewild or iodef',
  },
  {
    name: 'caa flags',
    input: { type: 'CAA', destination: '256 issue "x"' },
    error: 'CAA flags must be between 0 and 255',
  },
  {
    name: 'caa shape',
    input: { type: 'CAA', destination: 'issue' },
    error: 'CAA destination must be "flags tag value"',
  },
  {
    name: 'proxied mx',
    input: { type: 'MX', destination: 'mail.example.org', proxied: true },
    error: 'only A, AAAA and CNAME records can be proxied',
  },
  {
    name: 'proxied txt',
    input: { type: 'TXT', destination: 'x', proxied: true },
    error: 'only A, AAAA and CNAME records can be proxied',
  },
  {
    name: 'name outside zone',
    input: { name: 'www.example.net.' },
    error: 'name "www.example.net." is not inside the zone example.org',
  },
  {
    name: 'wildcard not leftmost',
    input: { name: 'a.*' },
    error: 'name "a.*" is not valid: a wildcard "*" is allowed only as the whole leftmost label',
  },
  {
    name: 'partial wildcard',
    input: { name: 'a*' },
    error: 'name "a*" is not valid: a wildcard "*" is allowed only as the whole leftmost label',
  },
  { name: 'empty name', input: { name: '' }, error: 'name must not be empty' },
  {
    name: 'bad char',
    input: { name: 'a!b' },
    error:
      'name "a!b" is not valid: label "a!b" may hold only letters, digits, "-" and "_", and may not start or end with "-"',
  },
  {
    name: 'label too long',
    input: { name: 'a'.repeat(64) },
    error: `name "${'a'.repeat(64)}" is not valid: label "${'a'.repeat(20)}…" is longer than 63 characters`,
  },
  {
    name: 'cname at apex',
    input: { name: '@', type: 'CNAME', destination: 'x.example.net' },
    error: 'a CNAME record cannot be at the zone apex',
  },
  {
    name: 'cname to itself',
    input: { name: 'loop', type: 'CNAME', destination: 'LOOP.example.org.' },
    error: 'a CNAME record cannot point to itself',
  },
  {
    name: 'ns at apex',
    input: { name: '@', type: 'NS', destination: 'ns.example.net' },
    error: 'NS records at the zone apex are managed by the platform',
  },
];
for (const c of bad) {
  test(`record rejected: ${c.name}`, () => {
    assert.throws(
      () => buildRecord(ZONE, make(c.input)),
      (err: Error & { statusCode?: number }) => {
        assert.equal(err.message, c.error);
        assert.equal(err.statusCode, c.status ?? 400);
        return true;
      },
    );
  });
}

test('scheme and port table', () => {
  const cases: [string | undefined, number | undefined, string, number][] = [
    ['Https', undefined, 'Https', 443],
    ['Https', 8443, 'Https', 8443],
    ['Https', 0, 'Https', 443],
    ['Https', 70000, 'Https', 443],
    ['Http', undefined, 'Http', 80],
    ['Http', 8080, 'Http', 8080],
    ['Http', -1, 'Http', 80],
    ['Http', 65536, 'Http', 80],
    ['Auto', 8080, 'Auto', 443],
    ['Default', 8080, 'Auto', 443],
    ['', 80, 'Auto', 443],
    ['gopher', 70, 'Auto', 443],
    [undefined, 8443, 'Auto', 443],
    ['https', 444, 'Https', 444],
  ];
  for (const [scheme, port, wantScheme, wantPort] of cases) {
    assert.deepEqual(normalizeScheme(scheme, port), { scheme: wantScheme, port: wantPort }, `${scheme} ${port}`);
  }
});

test('update keeps omitted fields; scheme change takes the new default port; type is fixed', () => {
  const base = buildRecord(ZONE, make({ scheme: 'Https', port: 8443, comment: 'keep', ttl: 300 }));
  assert.deepEqual({ ...applyPatch(ZONE, base, { destination: '192.0.2.2' }) }, { ...base, destination: '192.0.2.2' });
  assert.equal(applyPatch(ZONE, base, { scheme: 'Http' }).port, 80);
  assert.equal(applyPatch(ZONE, base, { port: 9443 }).port, 9443);
  assert.equal(applyPatch(ZONE, base, { scheme: 'Https' }).port, 8443);
  assert.equal(applyPatch(ZONE, base, { comment: '' }).comment, null);
  assert.equal(applyPatch(ZONE, base, { proxied: true }).ttl, 120);
  assert.throws(() => applyPatch(ZONE, base, { type: 'AAAA' }), /type cannot be changed/);
  assert.equal(applyPatch(ZONE, base, { type: 'a' }).type, 'A');
});
