// Issue 13 items 4 and 5 through running processes: fingerprint and bot_route rules written through the API (400s
// for bad fields) reach an edge node process through the config log and act there; the node verifies a claimed
// Googlebot against the resolver named by EDGE_CRAWLER_DNS (a stub DNS server on 127.0.0.1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { ja4h } from '../../edge-node/src/rules/fingerprint.js';
import { startStubDns } from '../helpers/stub-dns.js';
import { startControlPlane } from './sync-harness.js';
import { addProxiedRecord, startEdgeNodeProcess, waitUntil } from './edge-harness.js';

const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

test('fingerprint and bot_route rules from the API to an edge node', { timeout: 300_000 }, async (t) => {
  const origin = await startStubOrigin('main');
  t.after(() => origin.close());
  const bots = await startStubOrigin('bots');
  t.after(() => bots.close());
  const dns = await startStubDns();
  t.after(() => dns.close());
  dns.set('2.0.0.127.in-addr.arpa', 'PTR', ['crawl-66-249-66-1.googlebot.com']);
  dns.set('crawl-66-249-66-1.googlebot.com', 'A', ['127.0.0.2']);
  const cp = await startControlPlane('edge-client-rules');
  t.after(() => cp.stop());
  const domain = 'client-rules.example';
  await cp.api('POST', '/domains/', { name: domain });
  await addProxiedRecord(cp, domain, 'www', origin.port);
  await cp.restart(() => cp.cli('plan', 'override', domain, 'disabled_rule_types', '[]'));
  const edge = await startEdgeNodeProcess(cp, { EDGE_CRAWLER_DNS: dns.address });
  t.after(() => edge.stop());
  const www = `www.${domain}`;
  const get = (path: string, ua: string, localAddress = '127.0.0.1') =>
    send(edge.httpPort, www, path, { headers: { 'user-agent': ua }, localAddress });
  await waitUntil('the domain at the edge', async () =>
    (await get('/', 'probe/1')).status === 200 ? true : undefined,
  );

  // What Node's client sends here: Host, User-Agent, then Connection: close.
  const fp = ja4h('GET', [
    ['host', www],
    ['user-agent', 'probe/1'],
    ['connection', 'close'],
  ]);
  await cp.api('POST', `/domains/${domain}/rules/fingerprint/`, { fingerprints: ['nope'] }, 400);
  await cp.api('POST', `/domains/${domain}/rules/fingerprint/`, { fingerprints: [fp], path_includes: ['/fp/*'] });
  await waitUntil('the fingerprint rule', async () =>
    (await get('/fp/x', 'probe/1')).status === 403 ? true : undefined,
  );
  assert.equal((await get('/fp/x', 'probe/2')).status, 403, 'same shape: the fingerprint has no header values');
  assert.equal(
    (await send(edge.httpPort, www, '/fp/x', { headers: { 'user-agent': 'p', accept: '*/*' } })).status,
    200,
  );

  // bot_route: AI crawlers to another origin; unverified search-crawler claims blocked, verified ones served.
  await cp.api('POST', `/domains/${domain}/rules/bot_route/`, { classes: ['ai_crawler'], action: 'route' }, 400);
  await cp.api('POST', `/domains/${domain}/rules/bot_route/`, {
    classes: ['ai_crawler'],
    action: 'route',
    address: '127.0.0.1',
    port: bots.port,
  });
  await cp.api('POST', `/domains/${domain}/rules/bot_route/`, { classes: ['unverified_crawler'] });
  const gpt = await waitUntil('the route', async () => {
    const r = await get('/page', 'Mozilla/5.0 (compatible; GPTBot/1.2)');
    return r.body === 'origin bots /page' ? r : undefined;
  });
  assert.equal(gpt.status, 200);
  assert.equal((await get('/page', 'Mozilla/5.0 Firefox/133.0')).body, 'origin main /page');
  await waitUntil('the unverified claim blocked', async () =>
    (await get('/g', GOOGLEBOT, '127.0.0.3')).status === 403 ? true : undefined,
  );
  await waitUntil('Googlebot at 127.0.0.2 verified', async () =>
    (await get('/g', GOOGLEBOT, '127.0.0.2')).status === 200 ? true : undefined,
  );
  assert.equal((await get('/g', GOOGLEBOT, '127.0.0.3')).status, 403);
});
