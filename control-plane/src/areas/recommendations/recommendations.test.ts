// Recommendations through the API: each check against a domain put in its state and out of it, the one-click fixes
// (through the records and rules write paths), dismiss and restore, the account-wide list and count, permissions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { and, eq, sql } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { chainFor } from '../../../../test/helpers/certs.js';
import { configLog, dnsRecords, domains, rules, uptimeIncidents, uptimeMinuteCounts } from '../../db/schema.js';
import { storeIssuedCertificate } from '../ssl/service.js';
import { shipper } from '../analytics/test-log.js';
import { CHECK_IDS } from './checks.js';

interface Rec {
  id: string;
  status: string;
  details: Record<string, unknown>;
  reason: string | null;
  fixable: boolean;
  fix: { permission: string } | null;
  dismissed_at: string | null;
}
interface Checklist {
  domain: string;
  outstanding: number;
  recommendations: Rec[];
}

test('recommendations: each check from the domain’s real state, fixes, dismissals, account-wide reads', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const owner = await cp.user();
  const viewer = await cp.user();
  const editor = await cp.user();
  const stranger = await cp.user();
  const readOnly = await cp.key(owner.id, { readOnly: true });
  const name = await cp.domain(owner.key, 'advice.example.org');
  await cp.addMember(name, viewer.id, 'viewer');
  await cp.addMember(name, editor.id, 'editor');
  const [dom] = await db.select().from(domains).where(eq(domains.name, name));
  const url = `/domains/${name}/recommendations`;
  const checklist = async (key = owner.key) => {
    const res = await cp.call(key, 'GET', url);
    assert.equal(res.statusCode, 200, res.body);
    return res.json<Checklist>();
  };
  const check = async (id: string, key = owner.key) => (await checklist(key)).recommendations.find((r) => r.id === id)!;
  const statuses = async () => Object.fromEntries((await checklist()).recommendations.map((r) => [r.id, r.status]));
  const addRecord = async (body: Record<string, unknown>) => {
    const res = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, body);
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ id: number }>().id;
  };

  await t.test('a new managed domain without records: only the mail records are to do', async () => {
    const list = await checklist();
    assert.equal(list.domain, name);
    assert.deepEqual(
      list.recommendations.map((r) => r.id),
      [...CHECK_IDS],
    );
    assert.deepEqual(await statuses(), {
      https_certificate: 'not_applicable',
      dnssec: 'outstanding',
      origin_errors: 'not_applicable',
      spf_record: 'outstanding',
      dmarc_record: 'outstanding',
      cache_rules_unused: 'not_applicable',
      waf_off: 'not_applicable',
    });
    assert.equal(list.outstanding, 3);
    assert.equal((await check('https_certificate')).reason, 'the domain has no proxied records');
    assert.deepEqual((await check('dnssec')).details, {
      dnssec_status: 'disabled',
      enable: 'PUT /domains/{domain}/dnssec',
    });
    // Signing the zone passes the check.
    const on = await cp.call(owner.key, 'PUT', `/domains/${name}/dnssec`, { enabled: true });
    assert.equal(on.statusCode, 200, on.body);
    assert.equal((await check('dnssec')).status, 'passed');
    // Everyone who sees the domain reads it, read-only keys too; others 404.
    assert.equal((await checklist(viewer.key)).outstanding, 2);
    assert.equal((await checklist(readOnly.key)).outstanding, 2);
    const hidden = await cp.call(stranger.key, 'GET', url);
    assert.deepEqual([hidden.statusCode, hidden.json()], [404, { error: 'domain not found' }]);
  });

  await t.test('https_certificate: a proxied record without a certificate, then with one', async () => {
    await addRecord({ name: 'www', type: 'A', destination: '192.0.2.10', proxied: true });
    const https = await check('https_certificate');
    assert.deepEqual(
      [https.status, https.details],
      ['outstanding', { ssl_status: 'missing', domain_state: 'pending' }],
    );
    assert.equal(https.fixable, false);
    const { intermediate, leaf } = chainFor([name, `www.${name}`]);
    await storeIssuedCertificate(cp.app, name, {
      certPem: leaf.certPem,
      chainPem: intermediate.certPem,
      keyPem: leaf.keyPem,
    });
    assert.equal((await check('https_certificate')).status, 'passed');
    // With proxied records, the proxy checks apply: the default WAF rule is on, no cache rule, no origin data.
    const s = await statuses();
    assert.deepEqual([s.waf_off, s.cache_rules_unused, s.origin_errors], ['passed', 'passed', 'passed']);
  });

  await t.test('origin_errors: failing minutes of the last hour, or an open incident', async () => {
    const now = Date.now();
    const minute = (ago: number) => new Date(now - (now % 60_000) - ago * 60_000);
    const host = `www.${name}`;
    // Healthy, then thin: nothing to report.
    await db.insert(uptimeMinuteCounts).values([
      { domainId: dom.id, hostname: host, minute: minute(5), total: 100, errors: 5 },
      { domainId: dom.id, hostname: `api.${name}`, minute: minute(5), total: 10, errors: 10 },
      // Older than the hour: not looked at.
      { domainId: dom.id, hostname: host, minute: minute(90), total: 100, errors: 100 },
    ]);
    assert.equal((await check('origin_errors')).status, 'passed');
    await db
      .insert(uptimeMinuteCounts)
      .values({ domainId: dom.id, hostname: host, minute: minute(3), total: 50, errors: 45 });
    const failing = await check('origin_errors');
    assert.deepEqual(
      [failing.status, failing.details],
      [
        'outstanding',
        {
          window_minutes: 60,
          count: 1,
          hosts: [{ hostname: host, requests: 150, errors: 50, error_pct: 33.3, open_incident: false }],
        },
      ],
    );
    await db.delete(uptimeMinuteCounts).where(eq(uptimeMinuteCounts.domainId, dom.id));
    assert.equal((await check('origin_errors')).status, 'passed');
    const [incident] = await db
      .insert(uptimeIncidents)
      .values({ domainId: dom.id, hostname: host, startedAt: new Date(), peakErrorPct: 90 })
      .returning();
    assert.deepEqual((await check('origin_errors')).details.hosts, [
      { hostname: host, requests: 0, errors: 0, error_pct: 0, open_incident: true },
    ]);
    await db
      .update(uptimeIncidents)
      .set({ state: 'resolved', resolvedAt: new Date() })
      .where(eq(uptimeIncidents.id, incident.id));
    assert.equal((await check('origin_errors')).status, 'passed');
  });

  await t.test('spf_record: none, one, two', async () => {
    assert.deepEqual((await check('spf_record')).details, { spf_records: 0 });
    // A TXT elsewhere or not an SPF text does not count.
    await addRecord({ name: 'mail', type: 'TXT', destination: 'v=spf1 -all' });
    await addRecord({ name: '@', type: 'TXT', destination: 'v=spf10 nonsense' });
    assert.equal((await check('spf_record')).status, 'outstanding');
    await addRecord({ name: '@', type: 'TXT', destination: 'v=spf1 include:_spf.example.net -all' });
    assert.equal((await check('spf_record')).status, 'passed');
    const second = await addRecord({ name: '@', type: 'TXT', destination: 'V=SPF1 -all' });
    assert.deepEqual(await check('spf_record'), {
      ...(await check('spf_record')),
      status: 'outstanding',
      details: { spf_records: 2 },
    });
    assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${name}/records/${second}`)).statusCode, 200);
    assert.equal((await check('spf_record')).status, 'passed');
    assert.equal((await check('spf_record')).fix, null, 'no one-click fix');
  });

  await t.test('dmarc_record: the one-click fix publishes the record through the records write path', async () => {
    const dmarc = await check('dmarc_record');
    assert.deepEqual([dmarc.status, dmarc.fixable, dmarc.fix?.permission], ['outstanding', true, 'records.edit']);
    const forbidden = await cp.call(viewer.key, 'POST', `${url}/dmarc_record/fix`);
    assert.deepEqual(
      [forbidden.statusCode, forbidden.json()],
      [403, { error: 'your role (viewer) lacks the records.edit permission on this domain' }],
    );
    const ro = await cp.call(readOnly.key, 'POST', `${url}/dmarc_record/fix`);
    assert.deepEqual([ro.statusCode, ro.json()], [403, { error: 'read-only API key' }]);
    assert.equal((await cp.call(stranger.key, 'POST', `${url}/dmarc_record/fix`)).statusCode, 404);
    const versions = async () => (await db.select().from(configLog).where(eq(configLog.domainId, dom.id))).length;
    const before = await versions();
    const fixed = await cp.call(editor.key, 'POST', `${url}/dmarc_record/fix`);
    assert.equal(fixed.statusCode, 200, fixed.body);
    assert.deepEqual([fixed.json().status, fixed.json().fixable], ['passed', false]);
    const [txt] = await db
      .select()
      .from(dnsRecords)
      .where(and(eq(dnsRecords.domainId, dom.id), eq(dnsRecords.name, '_dmarc')));
    assert.deepEqual([txt.type, txt.destination], ['TXT', 'v=DMARC1; p=none']);
    assert.equal(await versions(), before + 1, 'one config-log entry: the nodes serve it');
    const again = await cp.call(owner.key, 'POST', `${url}/dmarc_record/fix`);
    assert.deepEqual([again.statusCode, again.json()], [400, { error: 'nothing to fix: dmarc_record is passed' }]);
  });

  await t.test('waf_off: the default rule disabled or in dry run; the fix restores it', async () => {
    const [waf] = await db
      .select()
      .from(rules)
      .where(and(eq(rules.domainId, dom.id), eq(rules.type, 'waf')));
    const off = await cp.call(owner.key, 'PATCH', `/domains/${name}/rules/waf/${waf.id}/enabled`, { enabled: false });
    assert.equal(off.statusCode, 200, off.body);
    const w = await check('waf_off');
    assert.deepEqual([w.status, w.fixable, w.fix?.permission], ['outstanding', true, 'rules.edit']);
    assert.equal((await cp.call(viewer.key, 'POST', `${url}/waf_off/fix`)).statusCode, 403);
    const fixed = await cp.call(owner.key, 'POST', `${url}/waf_off/fix`);
    assert.deepEqual([fixed.statusCode, fixed.json().status], [200, 'passed']);
    const [restored] = await db.select().from(rules).where(eq(rules.id, waf.id));
    assert.equal(restored.enabled, true);
    await db
      .update(rules)
      .set({ filters: sql`filters || '{"action_mode":"dry_run"}'` })
      .where(eq(rules.id, waf.id));
    assert.equal((await check('waf_off')).status, 'outstanding', 'dry run does not protect');
    await cp.call(owner.key, 'POST', `${url}/waf_off/fix`);
    assert.equal((await check('waf_off')).status, 'passed');
  });

  await t.test('cache_rules_unused: an old enabled cache rule without a hit in 7 days', async () => {
    const res = await cp.call(owner.key, 'POST', `/domains/${name}/rules/cache/`, {
      path_includes: ['/static/*'],
      edge_ttl: 600,
    });
    assert.equal(res.statusCode, 200, res.body);
    const ruleId = res.json<{ id: number }>().id;
    assert.equal((await check('cache_rules_unused')).status, 'passed', 'a new rule is not judged yet');
    await db
      .update(rules)
      .set({ createdAt: new Date(Date.now() - 2 * 86_400_000) })
      .where(eq(rules.id, ruleId));
    const unused = await check('cache_rules_unused');
    assert.deepEqual(
      [unused.status, unused.details],
      ['outstanding', { rule_ids: [ruleId], count: 1, window_days: 7 }],
    );
    // A request the rule matched, as an edge node ships it.
    await shipper(cp)('edge-a', [
      {
        t: Date.now() - 60_000,
        host: `www.${name}`,
        path: '/static/app.js',
        method: 'GET',
        status: 200,
        bytes: 100,
        cache: 'HIT',
        rules: [[ruleId, 'cache', false]],
        ms: 1,
        upstreamMs: -1,
        peer: '198.51.100.7',
      },
    ]);
    assert.equal((await check('cache_rules_unused')).status, 'passed');
    // A disabled rule is not judged.
    await db.update(rules).set({ enabled: false }).where(eq(rules.id, ruleId));
    assert.equal((await check('cache_rules_unused')).status, 'passed');
  });

  await t.test('dismiss and restore: listed as dismissed, not counted; domain.settings', async () => {
    await db.delete(dnsRecords).where(and(eq(dnsRecords.domainId, dom.id), eq(dnsRecords.type, 'TXT')));
    assert.equal((await checklist()).outstanding, 2);
    for (const key of [viewer.key, editor.key]) {
      const res = await cp.call(key, 'POST', `${url}/spf_record/dismiss`);
      assert.equal(res.statusCode, 403);
      assert.match(res.json().error, /lacks the domain.settings permission/);
    }
    assert.equal((await cp.call(readOnly.key, 'POST', `${url}/spf_record/dismiss`)).statusCode, 403);
    assert.equal((await cp.call(readOnly.key, 'DELETE', `${url}/spf_record/dismiss`)).statusCode, 403);
    const dismissed = await cp.call(owner.key, 'POST', `${url}/spf_record/dismiss`);
    assert.equal(dismissed.statusCode, 200);
    assert.equal(dismissed.json().status, 'dismissed');
    assert.ok(dismissed.json().dismissed_at);
    assert.equal(
      (await cp.call(owner.key, 'POST', `${url}/spf_record/dismiss`)).json().status,
      'dismissed',
      'twice is once',
    );
    assert.equal((await checklist()).outstanding, 1);
    // A dismissed fixable check can still be fixed.
    await cp.call(owner.key, 'POST', `${url}/dmarc_record/dismiss`);
    assert.equal((await check('dmarc_record')).fixable, true);
    const restored = await cp.call(owner.key, 'DELETE', `${url}/spf_record/dismiss`);
    assert.deepEqual(
      [restored.statusCode, restored.json().status, restored.json().dismissed_at],
      [200, 'outstanding', null],
    );
    assert.equal(
      (await cp.call(owner.key, 'DELETE', `${url}/spf_record/dismiss`)).statusCode,
      200,
      'restoring twice is harmless',
    );
    assert.equal((await checklist()).outstanding, 1);
    await cp.call(owner.key, 'DELETE', `${url}/dmarc_record/dismiss`);
  });

  await t.test('external DNS: the zone checks do not apply', async () => {
    const ext = await cp.domain(owner.key, 'elsewhere.example.net', 'external');
    const list = (await cp.call(owner.key, 'GET', `/domains/${ext}/recommendations`)).json<Checklist>();
    const s = Object.fromEntries(list.recommendations.map((r) => [r.id, r.status]));
    assert.deepEqual(
      [s.dnssec, s.spf_record, s.dmarc_record, list.outstanding],
      ['not_applicable', 'not_applicable', 'not_applicable', 0],
    );
  });

  await t.test('outstanding across domains, paged by domain; the count; each caller their own', async () => {
    const second = await cp.domain(owner.key, 'zz-second.example.org');
    const all = (await cp.call(owner.key, 'GET', '/recommendations')).json<{
      recommendations: Array<{ domain: string; id: string }>;
      next_cursor: string | null;
    }>();
    assert.deepEqual(
      all.recommendations.map((r) => `${r.domain} ${r.id}`),
      [
        `${name} spf_record`,
        `${name} dmarc_record`,
        `${second} dnssec`,
        `${second} spf_record`,
        `${second} dmarc_record`,
      ],
    );
    assert.equal(all.next_cursor, null);
    const first = (await cp.call(owner.key, 'GET', '/recommendations?limit=1')).json();
    assert.deepEqual([first.recommendations.length, first.next_cursor], [2, name]);
    const rest = (await cp.call(readOnly.key, 'GET', `/recommendations?limit=1&cursor=${first.next_cursor}`)).json();
    assert.equal(rest.recommendations.length, 0, 'the external domain has nothing outstanding');
    assert.equal(rest.next_cursor, 'elsewhere.example.net');
    const count = await cp.call(readOnly.key, 'GET', '/recommendations/count');
    assert.deepEqual(
      [count.statusCode, count.json()],
      [
        200,
        { outstanding: 5, by_severity: { high: 0, medium: 5, low: 0 }, domains: 2, domains_checked: 3, complete: true },
      ],
    );
    // The viewer sees the shared domain's; the stranger none.
    assert.equal((await cp.call(viewer.key, 'GET', '/recommendations/count')).json().outstanding, 2);
    assert.deepEqual((await cp.call(stranger.key, 'GET', '/recommendations')).json(), {
      recommendations: [],
      next_cursor: null,
    });
  });

  await t.test('bad input: 400 or 404 with an error text', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=x', `cursor=${'a'.repeat(254)}`, 'other=1']) {
      const res = await cp.call(owner.key, 'GET', `/recommendations?${q}`);
      assert.equal(res.statusCode, 400, q);
      assert.equal(typeof res.json().error, 'string');
    }
    // The path names the check: another name is no route, and only checks with a fix have one.
    for (const path of [`${url}/nope/dismiss`, `${url}/spf_record/fix`]) {
      const unknown = await cp.call(owner.key, 'POST', path);
      assert.equal(unknown.statusCode, 404, path);
      assert.equal(typeof unknown.json().error, 'string');
    }
    assert.equal((await cp.call(owner.key, 'GET', '/domains/nope.example/recommendations')).statusCode, 404);
    const na = await cp.call(owner.key, 'POST', `/domains/elsewhere.example.net/recommendations/dmarc_record/fix`);
    assert.deepEqual([na.statusCode, na.json()], [400, { error: 'nothing to fix: dmarc_record is not applicable' }]);
  });
});
