// bot_route rules: the classifier (unit), claimed search crawlers verified by reverse-then-forward DNS against a stub
// DNS server on 127.0.0.1, and through a running edge every action (block, challenge, allow, route, log), enforce and
// dry run, the bot score in the request log; a flood of crawler claims from many addresses starts a bounded number
// of lookups (the edge is no DNS load generator).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress, validateRule } from '@platform/shared/match';
import { RequestContext } from '../../edge-node/src/context.js';
import {
  proxiedRecord,
  rule,
  send,
  snapshot,
  startStubOrigin,
  startTestEdge,
} from '../../edge-node/src/testing/harness.js';
import {
  classify,
  crawlerDns,
  CrawlerVerifier,
  crawlerVerifier,
  HUMAN_MIN_SCORE,
} from '../../edge-node/src/rules/bot.js';
import { memoryOf } from '../../edge-node/src/metrics.js';
import { startStubDns } from '../helpers/stub-dns.js';
import { waitUntil } from './edge-harness.js';

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const BROWSER_HEADERS: Record<string, string> = {
  'user-agent': CHROME,
  accept: 'text/html,application/xhtml+xml',
  'accept-language': 'en-US,en;q=0.9',
  'accept-encoding': 'gzip, br',
  'sec-fetch-mode': 'navigate',
};

function ctxOf(headers: Record<string, string>, peer = '192.0.2.1'): RequestContext {
  return new RequestContext({
    method: 'GET',
    host: 'www.example.org',
    path: '/',
    query: '',
    headers: [['host', 'www.example.org'], ...Object.entries(headers)],
    peer: parsePeerAddress(peer),
    scheme: 'https',
    startedAt: 0,
  });
}

test('classifier', () => {
  const never = () => false;
  const c = (h: Record<string, string>) => classify(ctxOf(h), never);
  assert.deepEqual(c(BROWSER_HEADERS), { cls: 'human', score: 99 });
  const bare = c({ 'user-agent': CHROME });
  assert.equal(bare.cls, 'automation', 'a browser user agent without any browser header');
  assert.ok(bare.score < HUMAN_MIN_SCORE && bare.score >= 1);
  const { ['sec-fetch-mode']: _mode, ...withoutFetch } = BROWSER_HEADERS;
  const noFetch = c(withoutFetch);
  assert.equal(noFetch.cls, 'human');
  assert.ok(noFetch.score < 99);
  assert.deepEqual(c({}), { cls: 'automation', score: 1 });
  assert.deepEqual(c({ 'user-agent': '   ' }), { cls: 'automation', score: 1 });
  assert.equal(c({ 'user-agent': 'curl/8.5.0', accept: '*/*' }).cls, 'automation');
  assert.equal(c({ ...BROWSER_HEADERS, 'user-agent': 'python-requests/2.31' }).cls, 'automation');
  assert.equal(c({ ...BROWSER_HEADERS, 'user-agent': CHROME.replace('Chrome', 'HeadlessChrome') }).cls, 'automation');
  assert.equal(c({ 'user-agent': 'Mozilla/5.0 (compatible; AhrefsBot/7.0)' }).cls, 'automation');
  // A phone whose model name holds `bot` is not a bot.
  const cubot = 'Mozilla/5.0 (Linux; Android 10; CUBOT X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile';
  assert.equal(c({ ...BROWSER_HEADERS, 'user-agent': cubot }).cls, 'human');
  for (const ua of [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
    'CCBot/2.0 (https://commoncrawl.org/faq/)',
    'Mozilla/5.0 (compatible; PerplexityBot/1.0)',
  ])
    assert.deepEqual(c({ 'user-agent': ua }), { cls: 'ai_crawler', score: 1 }, ua);
  assert.deepEqual(c({ 'user-agent': GOOGLEBOT }), { cls: 'unverified_crawler', score: 1 });
  assert.deepEqual(
    classify(ctxOf({ 'user-agent': GOOGLEBOT }), (f) => f === 0),
    {
      cls: 'verified_crawler',
      score: 1,
    },
  );
  assert.deepEqual(
    classify(ctxOf({ 'user-agent': 'Mozilla/5.0 (compatible; bingbot/2.0)' }), (f) => f === 0),
    {
      cls: 'unverified_crawler',
      score: 1,
    },
  );
  // A user agent of 100 KB is read up to MAX_UA_CHARS: a token past it is not seen.
  assert.equal(c({ ...BROWSER_HEADERS, 'user-agent': `${CHROME}${' '.repeat(100_000)}curl/8` }).cls, 'human');
});

test('bot_route rule fields are validated', () => {
  const problems = (body: Record<string, unknown>) => {
    const v = validateRule('bot_route', body);
    return v.ok ? [] : v.problems.map((p) => p.path);
  };
  assert.deepEqual(problems({ classes: ['ai_crawler'] }), []);
  assert.deepEqual(problems({}), ['classes']);
  assert.deepEqual(problems({ classes: ['ai'] }), ['classes[0]']);
  assert.deepEqual(problems({ classes: ['ai_crawler'], action: 'route' }), ['address']);
  assert.deepEqual(problems({ classes: ['ai_crawler'], action: 'block', address: '192.0.2.1' }), ['address']);
  assert.deepEqual(problems({ classes: ['ai_crawler'], action: 'route', address: 'a b' }), ['address']);
  assert.deepEqual(problems({ classes: ['ai_crawler'], categories: ['ai'] }), ['categories']);
  const v = validateRule('bot_route', { classes: ['human', 'human'], action: 'route', address: '192.0.2.1' });
  assert.ok(v.ok);
  assert.deepEqual(v.ok && v.value.fields, {
    classes: ['human'],
    action: 'route',
    address: '192.0.2.1',
    scheme: 'http',
    port: 80,
    host_header: '',
    name: '',
  });
});

test('crawler verification by reverse-then-forward DNS', { timeout: 60_000 }, async (t) => {
  const dns = await startStubDns();
  t.after(() => dns.close());
  dns.set('2.0.0.127.in-addr.arpa', 'PTR', ['crawl-127-0-0-2.googlebot.com']);
  dns.set('crawl-127-0-0-2.googlebot.com', 'A', ['127.0.0.2']);
  dns.set('3.0.0.127.in-addr.arpa', 'PTR', ['crawler.example.net']); // not Google's domain
  dns.set('crawler.example.net', 'A', ['127.0.0.3']);
  dns.set('4.0.0.127.in-addr.arpa', 'PTR', ['crawl-x.googlebot.com']); // forward points elsewhere
  dns.set('crawl-x.googlebot.com', 'A', ['127.0.0.99']);
  // IPv6: the nibble name of 2001:db8::5 and an AAAA in a compressed spelling other than the peer's.
  const nibbles = '5' + '.0'.repeat(23) + '.8.b.d.0.1.0.0.2.ip6.arpa';
  dns.set(nibbles, 'PTR', ['crawl-v6.search.msn.com']);
  dns.set('crawl-v6.search.msn.com', 'AAAA', ['2001:db8:0:0::5']);
  const v = new CrawlerVerifier(crawlerDns([dns.address]), {
    maxEntries: 4,
    okTtlMs: 60_000,
    failTtlMs: 60_000,
    perSecond: 100,
    maxInFlight: 8,
  });
  for (const ip of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'])
    assert.equal(v.verified(ip, 0), false, 'unverified until the lookup completes');
  assert.equal(v.verified('2001:db8::5', 1), false);
  await waitUntil('verification', async () => (v.verified('127.0.0.2', 0) ? true : undefined));
  await waitUntil('IPv6 verification', async () => (v.verified('2001:db8::5', 1) ? true : undefined));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(v.verified('127.0.0.3', 0), false);
  assert.equal(v.verified('127.0.0.4', 0), false);
  assert.equal(v.verified('127.0.0.2', 1), false, 'verified as Googlebot, not as Bingbot');
  assert.ok(v.size <= 4, `at most maxEntries entries (${v.size})`);
});

test('bot_route rules through the edge', { timeout: 120_000 }, async (t) => {
  const dns = await startStubDns();
  t.after(() => dns.close());
  for (const n of [2, 3]) {
    dns.set(`${n}.0.0.127.in-addr.arpa`, 'PTR', [`crawl-${n}.googlebot.com`]);
    dns.set(`crawl-${n}.googlebot.com`, 'A', [`127.0.0.${n}`]);
  }
  const origin = await startStubOrigin('main');
  t.after(() => origin.close());
  const bots = await startStubOrigin('bots');
  t.after(() => bots.close());
  const name = 'bots.example.org';
  const host = `www.${name}`;
  const rec = proxiedRecord('www', origin.port);
  const edge = await startTestEdge(t, [snapshot(name, { records: [rec] })], {
    EDGE_CRAWLER_DNS: dns.address,
    EDGE_CRAWLER_LOOKUPS_PER_S: '5',
  });
  const port = edge.node.server.httpPort;
  const apply = (rules: ReturnType<typeof rule>[]) => edge.apply(snapshot(name, { records: [rec], rules }));
  const get = (path: string, headers: Record<string, string>, localAddress = '127.0.0.1') =>
    send(port, host, path, { headers, localAddress });
  const lastLog = (path: string) => {
    const all = edge.node.logs.drain().filter((l) => l.path === path);
    return all[all.length - 1];
  };
  const AI = { 'user-agent': 'Mozilla/5.0 (compatible; GPTBot/1.2)' };
  const CURL = { 'user-agent': 'curl/8.5.0', accept: '*/*' };

  // block: enforce 403 for the class, others pass; dry run passes and logs; the score is in the log.
  const block = rule('bot_route', { classes: ['ai_crawler'] });
  apply([block]);
  let r = await get('/b', AI);
  assert.equal(r.status, 403);
  assert.equal(r.body, 'blocked by a bot rule\n');
  let log = lastLog('/b');
  assert.deepEqual(log.rules, [[block.id, 'bot_route', false]]);
  assert.equal(log.bot, 1);
  assert.equal(log.botClass, 'ai_crawler');
  assert.equal((await get('/b', BROWSER_HEADERS)).status, 200);
  log = lastLog('/b');
  assert.equal(log.bot, 99);
  assert.equal(log.botClass, 'human');
  const dryBlock = rule('bot_route', { classes: ['ai_crawler'], action_mode: 'dry_run' });
  apply([dryBlock]);
  assert.equal((await get('/bd', AI)).status, 200);
  assert.deepEqual(lastLog('/bd').rules, [[dryBlock.id, 'bot_route', true]]);

  // challenge: the proof-of-work page for automation; dry run passes.
  const challenge = rule('bot_route', { classes: ['automation'], action: 'challenge' });
  apply([challenge]);
  r = await get('/c', CURL);
  assert.equal(r.status, 403);
  assert.equal(r.headers['x-edge-challenge'], 'pow');
  assert.deepEqual(lastLog('/c').rules, [[challenge.id, 'bot_route', false]]);
  assert.equal((await get('/c', BROWSER_HEADERS)).status, 200);
  const dryChallenge = rule('bot_route', { classes: ['automation'], action: 'challenge', action_mode: 'dry_run' });
  apply([dryChallenge]);
  assert.equal((await get('/cd', CURL)).status, 200);
  assert.deepEqual(lastLog('/cd').rules, [[dryChallenge.id, 'bot_route', true]]);

  // route: AI crawlers to another origin (origin_route's fields; its rule wins over an origin_route); dry run not.
  const routeFields = { classes: ['ai_crawler'], action: 'route', address: '127.0.0.1', port: bots.port };
  const route = rule('bot_route', routeFields);
  const originRoute = rule('origin_route', { address: '127.0.0.1', port: origin.port });
  apply([route, originRoute]);
  r = await get('/r', AI);
  assert.equal(r.status, 200);
  assert.equal(r.body, 'origin bots /r');
  assert.deepEqual(lastLog('/r').rules, [[route.id, 'bot_route', false]]);
  assert.equal((await get('/r', BROWSER_HEADERS)).body, 'origin main /r');
  const dryRoute = rule('bot_route', { ...routeFields, action_mode: 'dry_run' });
  apply([dryRoute]);
  r = await get('/rd', AI);
  assert.equal(r.body, 'origin main /rd');
  assert.deepEqual(lastLog('/rd').rules, [[dryRoute.id, 'bot_route', true]]);
  // With a cache rule, what the bots' origin answered is kept apart (the rule's id joins the key): people are not
  // served it, nor the bots the people's answer.
  const cached = rule('cache', { edge_ttl: 300 });
  apply([route, cached]);
  assert.equal((await get('/cached', AI)).body, 'origin bots /cached');
  assert.equal((await get('/cached', BROWSER_HEADERS)).body, 'origin main /cached');
  r = await get('/cached', BROWSER_HEADERS);
  assert.equal(r.body, 'origin main /cached');
  assert.equal(r.headers['x-cache-status'], 'HIT');
  r = await get('/cached', AI);
  assert.equal(r.body, 'origin bots /cached');
  assert.equal(r.headers['x-cache-status'], 'HIT');
  // The guarded connect applies to a bot route like any origin: an internal address the operator did not allow.
  const internal = rule('bot_route', { classes: ['ai_crawler'], action: 'route', address: '10.0.0.1', port: 80 });
  apply([internal]);
  r = await get('/ri', AI);
  assert.equal(r.status, 502);
  assert.equal(r.headers['x-edge-error'], 'EDGE_ERR_ORIGIN_REFUSED');

  // allow: a later block of the same class does not act (and its dry run does nothing); log records and passes.
  const allow = rule('bot_route', { classes: ['automation'], action: 'allow', priority: 1 });
  const laterBlock = rule('bot_route', { classes: ['automation', 'ai_crawler'], priority: 2 });
  const logRule = rule('bot_route', { classes: ['automation'], action: 'log', priority: 0 });
  apply([allow, laterBlock, logRule]);
  assert.equal((await get('/a', CURL)).status, 200);
  assert.deepEqual(lastLog('/a').rules, [
    [logRule.id, 'bot_route', false],
    [allow.id, 'bot_route', false],
  ]);
  assert.equal((await get('/a', AI)).status, 403);
  const dryAllow = rule('bot_route', { classes: ['automation'], action: 'allow', priority: 1, action_mode: 'dry_run' });
  apply([dryAllow, laterBlock]);
  assert.equal((await get('/ad', CURL)).status, 403);
  assert.deepEqual(lastLog('/ad').rules, [
    [dryAllow.id, 'bot_route', true],
    [laterBlock.id, 'bot_route', false],
  ]);

  // Claimed crawlers: unverified until the reverse-then-forward lookup completes, then verified; a claim from an
  // address whose reverse name is not Google's stays unverified.
  const fake = rule('bot_route', { classes: ['unverified_crawler'], priority: 1 });
  const verified = rule('bot_route', { classes: ['verified_crawler'], action: 'log', priority: 2 });
  apply([fake, verified]);
  const G = { 'user-agent': GOOGLEBOT };
  assert.equal((await get('/g', G, '127.0.0.2')).status, 403, 'unverified at first');
  await waitUntil('Googlebot verified', async () =>
    (await get('/g', G, '127.0.0.2')).status === 200 ? true : undefined,
  );
  assert.deepEqual(lastLog('/g').rules, [[verified.id, 'bot_route', false]]);
  await get('/g', G, '127.0.0.2');
  log = lastLog('/g');
  assert.equal(log.botClass, 'verified_crawler');
  assert.equal(log.peer, '127.0.0.2');
  await get('/g', G, '127.0.0.4');
  await new Promise((res) => setTimeout(res, 500));
  assert.equal((await get('/g', G, '127.0.0.4')).status, 403, 'no PTR: stays unverified');
  assert.equal((await get('/g', G, '127.0.0.1')).status, 403, 'the loopback default address has no PTR either');

  // Flood: claims from 120 addresses in a burst start at most the per-second budget of lookups (5 here, plus what
  // refilled meanwhile), each at most a PTR and one forward query; the edge answers every request.
  const queriesBefore = dns.queries();
  const startedBefore = crawlerVerifier.started;
  const t0 = Date.now();
  const answers = await Promise.all(
    Array.from({ length: 120 }, (_, i) => get(`/flood`, G, `127.0.1.${i + 1}`).then((x) => x.status)),
  );
  const seconds = (Date.now() - t0) / 1000;
  assert.ok(
    answers.every((s) => s === 403),
    'every claim answered, none verified',
  );
  const started = crawlerVerifier.started - startedBefore;
  assert.ok(started <= 5 + Math.ceil(seconds * 5), `lookups started ${started} in ${seconds}s`);
  assert.ok(crawlerVerifier.skipped > 0, 'claims beyond the budget were left unverified');
  await new Promise((res) => setTimeout(res, 500));
  const queries = dns.queries() - queriesBefore;
  assert.ok(queries <= 3 * started, `DNS queries ${queries} for ${started} lookups`);
  // The node's metrics count both (edge_crawler_lookups_total, edge_crawler_lookups_skipped_total).
  const m = memoryOf(edge.node);
  assert.equal(m.crawlerLookups, crawlerVerifier.started);
  assert.equal(m.crawlerLookupsSkipped, crawlerVerifier.skipped);
});
