// Managed domains through the API with a real Temporal dev server and a running worker: the zone scan imports the
// old DNS, the background delegation check activates pending domains, check-ns (every status of the spec), the
// disabled → enable → pending → active path, and developer mode (on, timer expiry, DELETE).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';

const OURS = ['ns1.platform.test', 'ns2.platform.test'];
const SECOND = ['ns3.platform.test', 'ns4.platform.test'];
const OLD = ['a.iana-servers.net', 'b.iana-servers.net'];

let L: Lifecycle;
const delegate = (domain: string, ns: string[]) => {
  L.dns.delegate(domain, ns);
  L.dns2.delegate(domain, ns);
};
const state = async (domain: string) => (await L.api('GET', `/domains/${domain}`)).body.state as string;

before(async () => {
  L = await startLifecycle('wf-managed', {
    DELEGATION_WATCH_FIRST_SECONDS: '1',
    DELEGATION_WATCH_MAX_SECONDS: '2',
    DEVELOPER_MODE_SECONDS: '3',
  });
});
after(async () => {
  await L?.close();
});

test('adding a managed domain scans its old DNS and imports the records (visible in GET records)', async () => {
  const d = 'scanned.example.org';
  delegate(d, OLD);
  for (const s of [L.dns, L.dns2]) {
    s.set(d, 'A', ['192.0.2.10']);
    s.set(d, 'MX', ['10 mail.scanned.example.org']);
    s.set(d, 'TXT', ['v=spf1 -all']);
    s.set(d, 'CAA', ['0 issue "letsencrypt.org"']);
    s.set(`www.${d}`, 'CNAME', [d]);
    s.set(`mail.${d}`, 'A', ['192.0.2.11']);
    s.set(`api.${d}`, 'AAAA', ['2001:db8::11']);
    s.set(`dev.${d}`, 'NS', ['ns.elsewhere.example.net']);
    s.set(`not-a-common-label.${d}`, 'A', ['192.0.2.99']);
  }
  const created = await L.api('POST', '/domains/', { name: d });
  assert.equal(created.status, 200);
  assert.equal(created.body.state, 'pending');
  const records = await eventually('the scanned records', async () => {
    const r = await L.api('GET', `/domains/${d}/records/`);
    return r.status === 200 && r.body.length >= 8 ? r.body : undefined;
  });
  const seen = records
    .map((r: any) => `${r.name} ${r.type} ${r.type === 'MX' ? `${r.mx_priority} ` : ''}${r.destination}`)
    .sort();
  assert.deepEqual(
    seen.map((s: string) => s.replace(/\.$/, '')),
    [
      '@ A 192.0.2.10',
      '@ CAA 0 issue "letsencrypt.org"',
      '@ MX 10 mail.scanned.example.org',
      '@ TXT v=spf1 -all',
      'api AAAA 2001:db8::11',
      'dev NS ns.elsewhere.example.net',
      'mail A 192.0.2.11',
      'www CNAME scanned.example.org',
    ],
  );
  assert.equal(await state(d), 'pending', 'still delegated elsewhere');
});

test('the background delegation check activates a pending domain once the delegation matches one set in full', async () => {
  const d = 'background.example.org';
  delegate(d, OLD);
  assert.equal((await L.api('POST', '/domains/', { name: d })).body.state, 'pending');
  delegate(d, [OURS[0], SECOND[0]]); // mixing sets never activates
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(await state(d), 'pending');
  delegate(d, SECOND);
  await eventually('background activation', async () => ((await state(d)) === 'active' ? true : undefined));
  const detail = (await L.api('GET', `/domains/${d}`)).body;
  assert.deepEqual(detail.nameservers, SECOND, 'the zone serves the matched set');
});

test('POST check-ns: 200 with what was seen, 429 within the hour, 400 when not awaiting nameservers or not managed', async () => {
  const d = 'manual.example.org';
  delegate(d, OLD);
  await L.api('POST', '/domains/', { name: d });
  const first = await L.api('POST', `/domains/${d}/check-ns`);
  assert.equal(first.status, 200);
  assert.equal(first.body.ok, false);
  assert.equal(first.body.state, 'pending');
  assert.deepEqual(first.body.nameservers, OLD);
  assert.deepEqual(first.body.expected, [OURS, SECOND]);
  assert.equal(first.body.matched_set, null);
  assert.match(first.body.error, /not to an accepted nameserver set/);
  const again = await L.api('POST', `/domains/${d}/check-ns`);
  assert.equal(again.status, 429);
  assert.equal(again.body.error, 'rate limit exceeded');
  assert.ok(Number(again.headers.get('retry-after')) > 3000);

  const mixed = 'mixed.example.org';
  delegate(mixed, OLD);
  await L.api('POST', '/domains/', { name: mixed });
  delegate(mixed, [OURS[0], SECOND[1]]);
  const m = await L.api('POST', `/domains/${mixed}/check-ns`);
  assert.equal(m.status, 200);
  assert.equal(m.body.ok, false);
  assert.match(m.body.error, /mix accepted sets/);
  assert.equal(await state(mixed), 'pending');

  const external = await L.api('POST', '/domains/', { name: 'ext-ns.example.org', dns_mode: 'external' });
  assert.equal(external.status, 200);
  const e = await L.api('POST', '/domains/ext-ns.example.org/check-ns');
  assert.deepEqual([e.status, e.body], [400, { error: 'domain does not use managed DNS' }]);
  assert.equal((await L.api('POST', '/domains/nothing-here.example.org/check-ns')).status, 404);
});

test('POST check-ns: pending → active at once, and moved → active; then 400 (no longer awaiting)', async () => {
  const d = 'now.example.org';
  delegate(d, OLD);
  await L.api('POST', '/domains/', { name: d });
  delegate(d, OURS);
  const r = await L.api('POST', `/domains/${d}/check-ns`);
  assert.equal(r.status, 200);
  assert.equal(r.body.ok, true);
  assert.equal(r.body.state, 'active');
  assert.equal(r.body.matched_set, 0);
  assert.equal(await state(d), 'active');
  const done = await L.api('POST', `/domains/${d}/check-ns`);
  assert.deepEqual(
    [done.status, done.body],
    [400, { error: 'domain is not awaiting nameserver changes (state active)' }],
  );

  const moved = 'moved.example.org';
  delegate(moved, OURS);
  await L.api('POST', '/domains/', { name: moved });
  await eventually('activation', async () => ((await state(moved)) === 'active' ? true : undefined));
  // An operator marks it moved (the delegation went elsewhere); the customer points it back and checks.
  assert.deepEqual((await L.internal('POST', `/internal/domains/${moved}/state`, { state: 'moved' })).body, {
    state: 'moved',
  });
  const back = await L.api('POST', `/domains/${moved}/check-ns`);
  assert.equal(back.status, 200);
  assert.equal(back.body.state, 'active');
});

test('disabled → POST enable → pending, re-checked against our nameservers → active; enable otherwise 400', async () => {
  const d = 'toggle.example.org';
  delegate(d, OURS);
  await L.api('POST', '/domains/', { name: d });
  await eventually('activation', async () => ((await state(d)) === 'active' ? true : undefined));
  const notDisabled = await L.api('POST', `/domains/${d}/enable`);
  assert.deepEqual([notDisabled.status, notDisabled.body], [400, { error: 'domain is not disabled' }]);
  await L.internal('POST', `/internal/domains/${d}/state`, { state: 'disabled' });
  assert.equal(await state(d), 'disabled');
  delegate(d, OLD);
  const enabled = await L.api('POST', `/domains/${d}/enable`);
  assert.equal(enabled.status, 200);
  assert.equal(enabled.body.state, 'pending');
  assert.equal(enabled.body.name, d);
  delegate(d, OURS);
  await eventually('re-activation by the delegation check', async () =>
    (await state(d)) === 'active' ? true : undefined,
  );
});

test('developer mode: POST on with expiry, the timer turns it off; DELETE turns it off at once', async () => {
  const d = 'dev.example.org';
  delegate(d, OLD);
  await L.api('POST', '/domains/', { name: d });
  const on = await L.api('POST', `/domains/${d}/developer-mode`);
  assert.equal(on.status, 200);
  assert.equal(on.body.enabled, true);
  const expires = Date.parse(on.body.expires_at);
  assert.ok(expires > Date.now() && expires <= Date.now() + 3500);
  const detail = (await L.api('GET', `/domains/${d}`)).body;
  assert.equal(detail.developer_mode, true);
  assert.equal(detail.developer_mode_expires_at, on.body.expires_at);
  await eventually('developer mode to expire', async () => {
    const r = await L.api('GET', `/domains/${d}`);
    return r.body.developer_mode === false ? true : undefined;
  });
  // The expiry went through the worker (config log entry, nodes see the flag drop): the DB field is cleared.
  const off = await L.api('DELETE', `/domains/${d}/developer-mode`);
  assert.deepEqual([off.status, off.body], [200, { enabled: false, expires_at: null }]);

  const again = await L.api('POST', `/domains/${d}/developer-mode`);
  assert.equal(again.body.enabled, true);
  const del = await L.api('DELETE', `/domains/${d}/developer-mode`);
  assert.deepEqual([del.status, del.body], [200, { enabled: false, expires_at: null }]);
  assert.equal((await L.api('GET', `/domains/${d}`)).body.developer_mode, false);
});
