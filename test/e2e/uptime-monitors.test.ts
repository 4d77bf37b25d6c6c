// Uptime API through the control plane: monitors (every 400 case of the spec with its exact body, 403, 404,
// defaults, update semantics, the cap), settings, the signing secret, test events and the deliveries log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { domains, subscriptions, workflowOutbox } from '../../control-plane/src/db/schema.js';
import { regexProblem } from '@platform/shared/match';

const NARROWS_NOTHING =
  'monitor: narrows nothing: with no host scope and every path it is the whole-host watch, which always runs; set host_includes or path_includes';

test('uptime monitors, settings and webhook API', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const stranger = await cp.user();
  const viewer = await cp.user();
  const readOnly = await cp.key(owner.id, { readOnly: true });
  const name = await cp.domain(owner.key, 'uptime-api.example.org');
  const capped = await cp.domain(owner.key, 'uptime-cap.example.org');
  const noPlan = await cp.domain(owner.key, 'uptime-noplan.example.org');
  await cp.addMember(name, viewer.id, 'viewer');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const url = `/uptime/monitors?domain=${name}`;
  const post = (body: unknown, key = owner.key, path = url) => cp.call(key, 'POST', path, body);
  const expect400 = async (body: unknown, error: string, raw = false) => {
    const res = raw
      ? await cp.call(owner.key, 'POST', url, body as string, { 'content-type': 'application/json' })
      : await post(body);
    assert.equal(res.statusCode, 400, res.body);
    return res.json() as { error: string };
  };

  await t.test('400: the domain query is missing', async () => {
    const res = await post({ path_includes: ['/api/*'] }, owner.key, '/uptime/monitors');
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { error: 'domain is required' });
  });

  await t.test('400: malformed body', async () => {
    assert.deepEqual(await expect400('{"path_includes": [', '', true), { error: 'malformed JSON body' });
    assert.deepEqual(await expect400('[1]', '', true), { error: 'body must be object' });
    assert.deepEqual(await expect400({ path: '/x' }, ''), { error: 'unknown field path' });
    assert.deepEqual(await expect400({ path_includes: '/x' }, ''), { error: 'path_includes must be array' });
    assert.deepEqual(await expect400({ enabled: 'yes' }, ''), { error: 'enabled must be boolean' });
    assert.deepEqual(await expect400({ host_match_type: 'glob', host_includes: ['a.x'] }, ''), {
      error: 'host_match_type must be one of: , exact, wildcard, regex',
    });
  });

  await t.test('400: an entry too long, a list too long', async () => {
    assert.deepEqual(await expect400({ name: 'n'.repeat(65), path_includes: ['/a'] }, ''), {
      error: 'name must be at most 64 characters',
    });
    assert.deepEqual(await expect400({ path_includes: [`/${'a'.repeat(2048)}`] }, ''), {
      error: 'path_includes[0] must be at most 2048 characters',
    });
    assert.deepEqual(await expect400({ host_includes: [`${'a'.repeat(1025)}.example.org`] }, ''), {
      error: 'host_includes[0] must be at most 1024 characters',
    });
    const host = `${'a'.repeat(250)}.example.org`;
    assert.deepEqual(await expect400({ host_includes: [host] }, ''), {
      error: `host_includes[0]: "${host}" is not a host name pattern`,
      problems: [{ path: 'host_includes[0]', message: `"${host}" is not a host name pattern` }],
    });
    assert.deepEqual(await expect400({ path_includes: Array.from({ length: 51 }, (_, i) => `/p${i}`) }, ''), {
      error: 'path_includes must have at most 50 entries',
    });
    assert.deepEqual(await expect400({ host_excludes: Array.from({ length: 201 }, (_, i) => `h${i}.x.org`) }, ''), {
      error: 'host_excludes must have at most 200 entries',
    });
  });

  await t.test('400: a regex that does not compile (RE2, compiled at write time)', async () => {
    const pathMessage = regexProblem('^/(a)\\1$')!;
    assert.match(pathMessage, /^invalid regex for the linear-time engine/);
    assert.deepEqual(await expect400({ path_match_type: 'regex', path_includes: ['^/ok/', '^/(a)\\1$'] }, ''), {
      error: `path_includes[1]: ${pathMessage}`,
      problems: [{ path: 'path_includes[1]', message: pathMessage }],
    });
    const hostMessage = regexProblem('^(?!www)', 'i')!;
    assert.deepEqual(await expect400({ host_match_type: 'regex', host_excludes: ['^(?!www)'] }, ''), {
      error: `host_excludes[0]: ${hostMessage}`,
      problems: [{ path: 'host_excludes[0]', message: hostMessage }],
    });
  });

  await t.test('400: a monitor that narrows nothing', async () => {
    const body = { error: NARROWS_NOTHING, problems: [{ path: 'monitor', message: NARROWS_NOTHING.slice(9) }] };
    assert.deepEqual(await expect400({}, ''), body);
    assert.deepEqual(await expect400({ name: 'everything', path_includes: ['/*'] }, ''), body);
    assert.deepEqual(await expect400({ path_includes: [], host_includes: null }, ''), body);
    assert.deepEqual(await expect400({ path_includes: ['/a', '*'] }, ''), body);
    // A path scope with an exclude, or any host scope, narrows.
    assert.equal((await post({ path_excludes: ['/health'] })).statusCode, 200);
    assert.equal((await post({ host_includes: ['api.uptime-api.example.org'] })).statusCode, 200);
  });

  await t.test('400: host_match_type contradicting the host fields', async () => {
    assert.deepEqual(await expect400({ host_match_type: '', host_includes: ['a.x.org'] }, ''), {
      error: 'host_match_type: must not be empty when host_pattern, host_includes or host_excludes is set',
      problems: [
        {
          path: 'host_match_type',
          message: 'must not be empty when host_pattern, host_includes or host_excludes is set',
        },
      ],
    });
    const exact = await expect400({ host_match_type: 'exact', host_includes: ['*.x.org'] }, '');
    assert.equal(exact.error, 'host_includes[0]: "*.x.org" contains "*" but host_match_type is exact');
  });

  await t.test('403 read-only key, role, plan; 404 unknown or invisible domain', async () => {
    const body = { path_includes: ['/api/*'] };
    let res = await post(body, readOnly.key);
    assert.equal(res.statusCode, 403);
    assert.deepEqual(res.json(), { error: 'read-only API key' });
    res = await post(body, viewer.key);
    assert.equal(res.statusCode, 403);
    assert.deepEqual(res.json(), { error: 'your role (viewer) lacks the domain.settings permission on this domain' });
    const [np] = await cp.database.db.select().from(domains).where(eq(domains.name, noPlan));
    await cp.database.db
      .update(subscriptions)
      .set({ overrides: { monitoring_enabled: false } })
      .where(eq(subscriptions.domainId, np.id));
    res = await post(body, owner.key, `/uptime/monitors?domain=${noPlan}`);
    assert.equal(res.statusCode, 403);
    assert.deepEqual(res.json(), {
      error: 'your plan (free) does not include the monitoring_enabled feature',
      feature: 'monitoring_enabled',
    });
    res = await post(body, stranger.key);
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { error: 'domain not found' });
    res = await post(body, owner.key, '/uptime/monitors?domain=nope.example.org');
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { error: 'domain not found' });
    // The viewer reads.
    assert.equal((await cp.call(viewer.key, 'GET', url)).statusCode, 200);
  });

  await t.test(
    'defaults, host_pattern folded, update keeps omitted fields and clears with [], enable, delete',
    async () => {
      let res = await post({ path_includes: ['/api/*'] });
      assert.equal(res.statusCode, 200, res.body);
      const m = res.json();
      assert.equal(m.domain_id, dom.id);
      assert.deepEqual(
        {
          name: m.name,
          enabled: m.enabled,
          host_pattern: m.host_pattern,
          host_match_type: m.host_match_type,
          host_includes: m.host_includes,
          host_excludes: m.host_excludes,
          path_match_type: m.path_match_type,
          path_includes: m.path_includes,
          path_excludes: m.path_excludes,
        },
        {
          name: '',
          enabled: true,
          host_pattern: '',
          host_match_type: '',
          host_includes: [],
          host_excludes: [],
          path_match_type: 'wildcard',
          path_includes: ['/api/*'],
          path_excludes: [],
        },
      );
      assert.ok(m.created_at && m.updated_at);

      res = await post({ name: 'API hosts', host_pattern: 'API.uptime-api.example.org.', host_includes: ['*.x.org'] });
      const h = res.json();
      assert.equal(h.host_match_type, 'wildcard');
      assert.deepEqual(h.host_includes, ['api.uptime-api.example.org', '*.x.org']);
      assert.equal(h.host_pattern, '');
      assert.deepEqual(h.path_includes, ['/*']);

      const mUrl = (id: number) => `/uptime/monitors/${id}?domain=${name}`;
      res = await cp.call(owner.key, 'PUT', mUrl(h.id), { name: 'renamed' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().name, 'renamed');
      assert.deepEqual(res.json().host_includes, h.host_includes, 'omitted fields are kept');
      res = await cp.call(owner.key, 'PUT', mUrl(h.id), { path_includes: ['/shop/*'], host_excludes: ['*.y.org'] });
      assert.deepEqual([res.json().path_includes, res.json().host_excludes], [['/shop/*'], ['*.y.org']]);
      res = await cp.call(owner.key, 'PUT', mUrl(h.id), { host_includes: [], host_excludes: [] });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        [res.json().host_match_type, res.json().host_includes, res.json().path_includes],
        ['', [], ['/shop/*']],
        'an explicit empty array clears; the host type follows',
      );
      res = await cp.call(owner.key, 'PUT', mUrl(h.id), { path_includes: [] });
      assert.equal(res.statusCode, 400, 'clearing the last scope narrows nothing');
      assert.equal(res.json().error, NARROWS_NOTHING);
      assert.deepEqual((await cp.call(owner.key, 'GET', mUrl(h.id))).json().path_includes, ['/shop/*']);
      res = await cp.call(owner.key, 'PUT', mUrl(h.id), { path_match_type: 'regex', path_includes: ['^/(x)\\1'] });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error, `path_includes[0]: ${regexProblem('^/(x)\\1')}`);

      res = await cp.call(owner.key, 'PATCH', `/uptime/monitors/${h.id}/enabled?domain=${name}`, { enabled: false });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().enabled, false);
      res = await cp.call(owner.key, 'PUT', mUrl(h.id), { name: 'still off' });
      assert.equal(res.json().enabled, false);

      const list = (await cp.call(owner.key, 'GET', url)).json();
      assert.equal(list.max_monitors, 20);
      assert.ok(list.monitors.some((x: { id: number }) => x.id === h.id));

      res = await cp.call(owner.key, 'DELETE', mUrl(h.id));
      assert.deepEqual([res.statusCode, res.json()], [200, { message: 'monitor deleted' }]);
      res = await cp.call(owner.key, 'DELETE', mUrl(h.id));
      assert.deepEqual([res.statusCode, res.json()], [404, { error: 'monitor not found' }]);
      // Another domain's monitor id is not found through this domain.
      res = await cp.call(owner.key, 'PUT', `/uptime/monitors/${m.id}?domain=${capped}`, { name: 'x' });
      assert.deepEqual([res.statusCode, res.json()], [404, { error: 'monitor not found' }]);
    },
  );

  await t.test('400: the domain already has its monitor cap', async () => {
    const capUrl = `/uptime/monitors?domain=${capped}`;
    for (let i = 0; i < 20; i++) {
      const res = await post({ name: `m${i}`, path_includes: [`/p${i}/*`] }, owner.key, capUrl);
      assert.equal(res.statusCode, 200, res.body);
    }
    const res = await post({ path_includes: ['/one-more'] }, owner.key, capUrl);
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), {
      error: 'the domain already has 20 monitors, the most a domain may have (20)',
      max_monitors: 20,
    });
    assert.equal(res.headers['x-error-code'], 'CP_ERR_MONITOR_CAP');
    const list = (await cp.call(owner.key, 'GET', capUrl)).json();
    assert.deepEqual([list.monitors.length, list.max_monitors], [20, 20]);
  });

  await t.test('settings: defaults, PUT keeps omitted fields, bad URLs', async () => {
    const sUrl = `/uptime/settings?domain=${name}`;
    let res = await cp.call(viewer.key, 'GET', sUrl);
    assert.equal(res.statusCode, 200);
    const { updated_at: _u, ...defaults } = res.json();
    assert.deepEqual(defaults, {
      domain: name,
      webhook_url: '',
      notify_webhook: false,
      error_threshold_pct: 50,
      min_requests_per_minute: 20,
      open_after_minutes: 2,
      resolve_after_minutes: 3,
    });
    res = await cp.call(owner.key, 'PUT', sUrl, { notify_webhook: true });
    assert.deepEqual([res.statusCode, res.json()], [400, { error: 'notify_webhook needs a webhook_url' }]);
    for (const [bad, error] of [
      ['ftp://h.example/x', 'webhook_url must be an http:// or https:// URL'],
      ['/relative', 'webhook_url must be an absolute http:// or https:// URL'],
      ['https://u:p@h.example/', 'webhook_url must not carry a user name or password'],
    ]) {
      res = await cp.call(owner.key, 'PUT', sUrl, { webhook_url: bad });
      assert.deepEqual([res.statusCode, res.json()], [400, { error }]);
    }
    res = await cp.call(owner.key, 'PUT', sUrl, { error_threshold_pct: 0 });
    assert.deepEqual([res.statusCode, res.json()], [400, { error: 'error_threshold_pct must be between 1 and 100' }]);
    res = await cp.call(viewer.key, 'PUT', sUrl, { notify_webhook: false });
    assert.equal(res.statusCode, 403);
    res = await cp.call(owner.key, 'PUT', sUrl, { webhook_url: 'https://hooks.example.net/in', notify_webhook: true });
    assert.equal(res.statusCode, 200, res.body);
    res = await cp.call(owner.key, 'PUT', sUrl, { open_after_minutes: 5 });
    assert.deepEqual(
      [res.json().webhook_url, res.json().notify_webhook, res.json().open_after_minutes],
      ['https://hooks.example.net/in', true, 5],
    );
  });

  await t.test('webhook: the signing secret (owner only), a new one, test events and the deliveries log', async () => {
    const wUrl = `/uptime/webhook?domain=${name}`;
    assert.equal((await cp.call(viewer.key, 'GET', wUrl)).statusCode, 403, 'a viewer does not read the secret');
    const first = (await cp.call(owner.key, 'GET', wUrl)).json();
    assert.match(first.signing_secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.equal(first.webhook_url, 'https://hooks.example.net/in');
    const again = (await cp.call(owner.key, 'GET', wUrl)).json();
    assert.equal(again.signing_secret, first.signing_secret);
    const rotated = await cp.call(owner.key, 'POST', `/uptime/webhook/secret?domain=${name}`);
    assert.equal(rotated.statusCode, 200);
    assert.notEqual(rotated.json().signing_secret, first.signing_secret);
    assert.equal((await cp.call(owner.key, 'GET', wUrl)).json().signing_secret, rotated.json().signing_secret);

    // Test without a saved URL: 400, nothing recorded.
    const noUrl = await cp.call(owner.key, 'POST', `/uptime/webhook/test?domain=${capped}`);
    assert.deepEqual(
      [noUrl.statusCode, noUrl.json()],
      [400, { error: 'no webhook_url is saved for this domain (PUT /uptime/settings)' }],
    );
    const res = await cp.call(owner.key, 'POST', `/uptime/webhook/test?domain=${name}`);
    assert.equal(res.statusCode, 200, res.body);
    const d = res.json();
    assert.equal(d.event, 'test');
    assert.equal(d.state, 'pending');
    assert.equal(d.url, 'https://hooks.example.net/in');
    assert.deepEqual(d.attempts, []);
    assert.equal(d.payload.incident_id, 0);
    assert.equal(d.payload.domain, name);
    assert.equal(d.payload.monitor_id, null);
    const [entry] = await cp.database.db
      .select()
      .from(workflowOutbox)
      .where(eq(workflowOutbox.workflowId, `uptime-webhook:${d.id}`));
    assert.equal(entry.workflowType, 'deliverUptimeWebhook');
    assert.deepEqual(entry.args, [{ deliveryId: d.id }]);

    // The worker's report of an attempt shows in the log.
    const token =
      cp.config.nodeToken ?? (await import('node:fs')).readFileSync(`${cp.config.dataDir}/node-token`, 'utf8');
    const internal = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      cp.app.inject({
        method,
        url: path,
        headers: { authorization: `Bearer ${String(token).trim()}`, 'content-type': 'application/json' },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
    const ctx = await internal('GET', `/internal/uptime/deliveries/${d.id}`);
    assert.equal(ctx.statusCode, 200, ctx.body);
    assert.equal(ctx.json().signing_secret, rotated.json().signing_secret);
    const attempt = {
      attempt: 1,
      started_at: new Date().toISOString(),
      status_code: 500,
      duration_ms: 12,
      error: 'answered 500',
      outcome: 'failure',
      final: false,
    };
    assert.deepEqual((await internal('POST', `/internal/uptime/deliveries/${d.id}/attempts`, attempt)).json(), {
      state: 'pending',
    });
    await internal('POST', `/internal/uptime/deliveries/${d.id}/attempts`, {
      ...attempt,
      attempt: 2,
      status_code: 204,
      error: null,
      outcome: 'success',
    });
    const log = (await cp.call(viewer.key, 'GET', `/uptime/webhook/deliveries?domain=${name}`)).json();
    assert.equal(log[0].id, d.id);
    assert.equal(log[0].state, 'delivered');
    assert.deepEqual(
      log[0].attempts.map((a: { attempt: number; status_code: number; outcome: string }) => [
        a.attempt,
        a.status_code,
        a.outcome,
      ]),
      [
        [1, 500, 'failure'],
        [2, 204, 'success'],
      ],
    );
    // API keys never reach /internal.
    assert.equal((await cp.call(owner.key, 'GET', `/internal/uptime/deliveries/${d.id}`)).statusCode, 403);

    // Manual redelivery: a new delivery with the same body.
    const re = await cp.call(owner.key, 'POST', `/uptime/webhook/deliveries/${d.id}/redeliver?domain=${name}`);
    assert.equal(re.statusCode, 200, re.body);
    assert.equal(re.json().redelivery_of, d.id);
    assert.deepEqual(re.json().payload, d.payload);
    const missing = await cp.call(owner.key, 'POST', `/uptime/webhook/deliveries/999999/redeliver?domain=${name}`);
    assert.deepEqual([missing.statusCode, missing.json()], [404, { error: 'delivery not found' }]);
  });

  await t.test('a test storm is bounded: at most 20 deliveries pending per domain', async () => {
    let last;
    for (let i = 0; i < 25; i++) last = await cp.call(owner.key, 'POST', `/uptime/webhook/test?domain=${name}`);
    assert.equal(last!.statusCode, 429);
    assert.deepEqual(last!.json(), {
      error: 'too many webhook deliveries in flight for this domain (at most 20 pending)',
    });
  });

  await t.test('incidents and status read empty', async () => {
    for (const p of ['/uptime/incidents', '/uptime/incidents/open', '/uptime/status']) {
      const res = await cp.call(viewer.key, 'GET', `${p}?domain=${name}`);
      assert.deepEqual([res.statusCode, res.json()], [200, []]);
    }
  });
});
