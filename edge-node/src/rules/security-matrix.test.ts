// The security rule types together through a running edge (README "Security test matrix"): one domain with a rule of
// every type, where a browser's request passes every one and each type acts on its own trigger with the others
// present (in phase order: custom, fingerprint, bot_route, rate_limit, challenge, WAF); the same types all in dry run,
// where one request trips every one and passes; and the cells the per-type tests leave open: `log`, `allow` and
// `skip` in dry run, a fingerprint `allow` ending bot_route, a clearance passing the rate_limit, fingerprint and
// bot_route challenges, Under Attack Mode beside custom rules and the WAF, and a rule that does not compile at the
// edge left out without taking its domain down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Rule } from '@platform/shared/config';
import { decodeRuleBody, encodeRuleBody } from '@platform/shared/match';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge, type Reply } from '../testing/harness.js';
import type { RequestLogRecord } from '../log/buffer.js';
import { CHALLENGE_DIFFICULTY, CHALLENGE_PATH, workDone } from './challenge.js';
import { ja4h } from './fingerprint.js';

const BROWSER = {
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
  accept: 'text/html,application/xhtml+xml',
  'accept-language': 'en-GB,en;q=0.5',
  'sec-fetch-mode': 'navigate',
};
const CURL = { 'user-agent': 'curl/8.5.0', accept: '*/*' };
/** A client shape the fingerprint rules single out; automation to bot_route (scored 4: no browser's headers). */
const SCRIPTED = { 'user-agent': 'scripted/1.0', 'x-scripted': '1' };
const BENIGN = `/search?q=select+a+plan&name=${encodeURIComponent("O'Brien")}`;
const ATTACK = `/search?q=${encodeURIComponent("1' union select password from users--")}`;

/** What the harness's client sends: Host, the given headers in order, then Connection: close. */
const fingerprintOf = (host: string, headers: Record<string, string>) =>
  ja4h('GET', [['host', host], ...Object.entries(headers), ['connection', 'close']]);

const custom = (expression: string, action: string, extra: Record<string, unknown> = {}) =>
  rule('custom', { expression, action, ...extra });

test('security rule types together through the edge', { timeout: 120_000 }, async (t) => {
  const page = 'p'.repeat(2048);
  const origin = await startStubOrigin('main', (req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`origin ${req.url} ${page}`);
  });
  t.after(() => origin.close());
  const edge = await startTestEdge(t);
  const port = edge.node.server.httpPort;
  const logs = () => edge.node.logs.drain();
  const last = (path: string): RequestLogRecord => {
    const all = logs().filter((l) => l.path === path);
    assert.ok(all.length > 0, `a log record for ${path}`);
    return all[all.length - 1];
  };
  const hitsOf = (r: RequestLogRecord) => r.rules.map(([id, type, dry]) => `${type}:${id}${dry ? ':dry' : ''}`);
  const get = (host: string, path: string, headers: Record<string, string>) => send(port, host, path, { headers });

  /** The challenge page for `path`, solved and posted; returns the clearance cookie. */
  async function solve(host: string, challenged: Reply, headers: Record<string, string>): Promise<string> {
    assert.equal(challenged.status, 403);
    assert.equal(challenged.headers['x-edge-challenge'], 'pow');
    const nonce = /name="nonce" value="([^"]+)"/.exec(challenged.body)![1];
    let n = 0;
    while (!workDone(nonce, String(n), CHALLENGE_DIFFICULTY)) n++;
    const answer = await send(port, host, CHALLENGE_PATH, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ nonce, solution: String(n) }).toString(),
    });
    assert.equal(answer.status, 303, answer.body);
    return String(answer.headers['set-cookie']).split(';')[0];
  }

  await t.test('every type enforced on one domain: a browser passes them all, each acts on its trigger', async () => {
    const name = 'all.example.org';
    const host = `www.${name}`;
    const rules = {
      waf: rule('waf', { priority: 1000, paranoia_level: 1 }),
      rate: rule('rate_limit', { path_includes: ['/api/*'], requests: 3, period_s: 600, block_s: 600 }),
      bot: rule('bot_route', { classes: ['ai_crawler', 'automation', 'unverified_crawler'] }),
      fp: rule('fingerprint', { fingerprints: [fingerprintOf(host, SCRIPTED)] }),
      captcha: rule('captcha', { path_includes: ['/login'] }),
      optimize: rule('optimize', { compression: ['gzip'] }),
      partner: custom('http.user_agent eq "partner-monitor/1"', 'allow', { priority: 1 }),
      wpLogin: custom('http.request.uri.path eq "/wp-login.php"', 'block', { priority: 2 }),
      apiAdmin: custom('http.request.uri.path wildcard "/api/admin*"', 'block', { priority: 3 }),
    };
    edge.apply(snapshot(name, { records: [proxiedRecord('www', origin.port)], rules: Object.values(rules) }));
    logs();

    // A browser's request that looks dangerous to a naive filter: every rule looks, none acts.
    let r = await get(host, BENIGN, BROWSER);
    assert.equal(r.status, 200);
    assert.ok(r.body.startsWith(`origin ${BENIGN} `));
    let rec = last('/search');
    assert.deepEqual(rec.rules, []);
    assert.equal(rec.waf, undefined);
    assert.equal(rec.botClass, 'human');
    assert.equal(rec.fp, fingerprintOf(host, BROWSER));
    // optimize: the same client taking gzip gets the answer compressed.
    r = await get(host, BENIGN, { ...BROWSER, 'accept-encoding': 'gzip' });
    assert.equal(r.headers['content-encoding'], 'gzip');
    assert.equal(r.status, 200);
    assert.deepEqual(hitsOf(last('/search')), [`optimize:${rules.optimize.id}`]);

    // custom block first: the curl client on /wp-login.php is refused by the custom rule, not the bot rule.
    r = await get(host, '/wp-login.php', CURL);
    assert.equal(r.body, 'blocked by a custom rule\n');
    rec = last('/wp-login.php');
    assert.deepEqual(hitsOf(rec), [`custom:${rules.wpLogin.id}`]);
    assert.equal(rec.botClass, undefined, 'no later phase looked');
    // fingerprint before bot_route: the scripted client (automation to bot_route too) is refused by the fingerprint
    // rule.
    r = await get(host, '/page', SCRIPTED);
    assert.equal(r.body, 'blocked by a fingerprint rule\n');
    assert.deepEqual(hitsOf(last('/page')), [`fingerprint:${rules.fp.id}`]);
    r = await get(host, '/page', CURL);
    assert.equal(r.body, 'blocked by a bot rule\n');
    assert.deepEqual(hitsOf(last('/page')), [`bot_route:${rules.bot.id}`]);
    // the WAF: the attack from a browser.
    r = await get(host, ATTACK, BROWSER);
    assert.equal(r.status, 403);
    assert.equal(r.headers['x-edge-error'], 'EDGE_ERR_WAF_BLOCKED');
    assert.deepEqual(hitsOf(last('/search')), [`waf:${rules.waf.id}`]);
    // captcha: the page, solved, the clearance passes.
    const cookie = await solve(host, await get(host, '/login', BROWSER), BROWSER);
    assert.equal((await get(host, '/login', { ...BROWSER, cookie })).status, 200);
    logs();

    // rate_limit: requests refused by a custom rule earlier take no slot; then 3 pass and the 4th is limited.
    for (let i = 0; i < 5; i++) assert.equal((await get(host, '/api/admin/x', BROWSER)).status, 403);
    for (let i = 0; i < 3; i++) assert.equal((await get(host, `/api/${i}`, BROWSER)).status, 200, `request ${i}`);
    r = await get(host, '/api/3', BROWSER);
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers['retry-after']) >= 1);
    assert.deepEqual(hitsOf(last('/api/3')), [`rate_limit:${rules.rate.id}`]);

    // A custom allow exempts a partner's monitor (an automation client) from bot_route, rate_limit, the challenge and
    // the WAF; the allow is the only hit.
    const partner = { ...CURL, 'user-agent': 'partner-monitor/1' };
    for (const path of ['/api/4', '/login', ATTACK, '/page']) {
      r = await get(host, path, partner);
      assert.equal(r.status, 200, path);
      assert.deepEqual(hitsOf(last(path.split('?')[0])), [`custom:${rules.partner.id}`], path);
    }
  });

  await t.test('every type in dry run: one request trips them all and passes, each logged as a dry hit', async () => {
    const name = 'dry.example.org';
    const host = `www.${name}`;
    const dry = { action_mode: 'dry_run' };
    const curlGzip = { ...CURL, 'accept-encoding': 'gzip' };
    const everyType: Rule[] = [
      custom('http.request.uri.path wildcard "/api/*"', 'block', dry),
      rule('fingerprint', { fingerprints: [fingerprintOf(host, curlGzip)], ...dry }),
      rule('bot_route', { classes: ['automation'], ...dry }),
      rule('rate_limit', { path_includes: ['/api/*'], requests: 1, period_s: 600, ...dry }),
      rule('captcha', { path_includes: ['/api/*'], ...dry }),
      rule('waf', { paranoia_level: 1, ...dry }),
      rule('optimize', { compression: ['gzip'], ...dry }),
    ];
    edge.apply(snapshot(name, { records: [proxiedRecord('www', origin.port)], rules: everyType }));
    logs();
    const path = `/api/x?q=${encodeURIComponent("1' union select password from users--")}`;
    assert.equal((await get(host, path, curlGzip)).status, 200);
    const r = await get(host, path, curlGzip);
    assert.equal(r.status, 200, 'the second request is over the limit and passes');
    assert.equal(r.headers['content-encoding'], undefined, 'a dry-run optimize rule compresses nothing');
    assert.ok(r.body.startsWith('origin /api/x?q='));
    const rec = last('/api/x');
    const ids = everyType.map((x) => x.id);
    assert.deepEqual(
      rec.rules,
      [
        [ids[0], 'custom', true],
        [ids[1], 'fingerprint', true],
        [ids[2], 'bot_route', true],
        [ids[3], 'rate_limit', true],
        [ids[4], 'captcha', true],
        [ids[5], 'waf', true],
        [ids[6], 'optimize', true],
      ],
      JSON.stringify(rec.rules),
    );
    assert.ok(rec.waf?.every(([id, , , , , action]) => id === ids[5] && action === 'log'));
  });

  await t.test('custom log, allow and skip in dry run: a dry hit, and evaluation goes on', async () => {
    const name = 'custom-dry.example.org';
    const host = `www.${name}`;
    const logDry = custom('http.request.uri.path wildcard "/c/*"', 'log', { priority: 1, action_mode: 'dry_run' });
    const allowDry = custom('http.user_agent eq "partner-monitor/1"', 'allow', { priority: 2, action_mode: 'dry_run' });
    const skipDry = custom('http.request.headers["x-skip"] eq "1"', 'skip', { priority: 3, action_mode: 'dry_run' });
    const block = custom('http.request.uri.path eq "/c/block"', 'block', { priority: 10 });
    const limit = rule('rate_limit', { path_includes: ['/c/limited'], requests: 1, period_s: 600, block_s: 600 });
    edge.apply(
      snapshot(name, {
        records: [proxiedRecord('www', origin.port)],
        rules: [logDry, allowDry, skipDry, block, limit],
      }),
    );
    logs();
    assert.equal((await get(host, '/c/open', BROWSER)).status, 200);
    assert.deepEqual(hitsOf(last('/c/open')), [`custom:${logDry.id}:dry`]);
    assert.equal((await get(host, '/c/block', BROWSER)).status, 403, 'a dry log does not stop the block');
    assert.deepEqual(hitsOf(last('/c/block')), [`custom:${logDry.id}:dry`, `custom:${block.id}`]);
    const partner = { ...BROWSER, 'user-agent': 'partner-monitor/1' };
    assert.equal((await get(host, '/c/block', partner)).status, 403, 'a dry allow exempts nothing');
    assert.deepEqual(hitsOf(last('/c/block')), [
      `custom:${logDry.id}:dry`,
      `custom:${allowDry.id}:dry`,
      `custom:${block.id}`,
    ]);
    assert.equal((await get(host, '/c/limited', partner)).status, 200);
    assert.equal((await get(host, '/c/limited', partner)).status, 429, 'nor from rate_limit');
    assert.equal((await get(host, '/c/block', { ...BROWSER, 'x-skip': '1' })).status, 403, 'a dry skip skips nothing');
    assert.deepEqual(hitsOf(last('/c/block')), [
      `custom:${logDry.id}:dry`,
      `custom:${skipDry.id}:dry`,
      `custom:${block.id}`,
    ]);
  });

  await t.test('fingerprint and bot_route: log in dry run, a fingerprint allow ends bot_route', async () => {
    const name = 'client-dry.example.org';
    const host = `www.${name}`;
    const fpLogDry = rule('fingerprint', {
      fingerprints: [fingerprintOf(host, CURL)],
      action: 'log',
      action_mode: 'dry_run',
      path_includes: ['/log/*'],
    });
    const botLogDry = rule('bot_route', { classes: ['automation'], action: 'log', action_mode: 'dry_run' });
    const fpAllow = rule('fingerprint', {
      fingerprints: [fingerprintOf(host, SCRIPTED)],
      action: 'allow',
      path_includes: ['/allow/*'],
    });
    const botBlock = rule('bot_route', { classes: ['automation'], path_includes: ['/allow/*', '/block/*'] });
    edge.apply(
      snapshot(name, {
        records: [proxiedRecord('www', origin.port)],
        rules: [fpLogDry, botLogDry, fpAllow, botBlock],
      }),
    );
    logs();
    assert.equal((await get(host, '/log/x', CURL)).status, 200);
    assert.deepEqual(hitsOf(last('/log/x')), [`fingerprint:${fpLogDry.id}:dry`, `bot_route:${botLogDry.id}:dry`]);
    // SCRIPTED is automation to bot_route: blocked, unless its fingerprint is allowed.
    assert.equal((await get(host, '/block/x', SCRIPTED)).status, 403);
    assert.equal((await get(host, '/allow/x', SCRIPTED)).status, 200);
    const rec = last('/allow/x');
    assert.deepEqual(hitsOf(rec), [`fingerprint:${fpAllow.id}`]);
    assert.equal(rec.botClass, undefined, 'bot_route did not look');
  });

  await t.test('a clearance passes the challenge of rate_limit, fingerprint and bot_route rules', async () => {
    const name = 'cleared.example.org';
    const host = `www.${name}`;
    const rate = rule('rate_limit', {
      path_includes: ['/rl/*'],
      requests: 1,
      period_s: 600,
      block_s: 600,
      action: 'captcha',
    });
    const fp = rule('fingerprint', {
      fingerprints: [fingerprintOf(host, SCRIPTED)],
      action: 'challenge',
      path_includes: ['/fp/*'],
    });
    const bot = rule('bot_route', { classes: ['automation'], action: 'challenge', path_includes: ['/bot/*'] });
    const records = [proxiedRecord('www', origin.port)];
    edge.apply(snapshot(name, { records, rules: [rate, fp, bot] }));
    logs();

    assert.equal((await get(host, '/rl/a', BROWSER)).status, 200);
    const overLimit = await get(host, '/rl/a', BROWSER);
    assert.deepEqual(hitsOf(last('/rl/a')), [`rate_limit:${rate.id}`]);
    const rlCookie = await solve(host, overLimit, BROWSER);
    for (let i = 0; i < 3; i++)
      assert.equal((await get(host, '/rl/a', { ...BROWSER, cookie: rlCookie })).status, 200, 'over the limit, cleared');

    const fpPage = await get(host, '/fp/a', SCRIPTED);
    assert.deepEqual(hitsOf(last('/fp/a')), [`fingerprint:${fp.id}`]);
    const fpCookie = await solve(host, fpPage, SCRIPTED);
    // The cookie joins the client's headers and so its fingerprint: the rule lists that one too, so the request
    // still matches it and what lets it through is the clearance (refused from another address, where it is not
    // valid).
    const withCookie = { ...SCRIPTED, cookie: fpCookie };
    const fp2 = rule('fingerprint', {
      fingerprints: [fingerprintOf(host, withCookie)],
      action: 'challenge',
      path_includes: ['/fp/*'],
    });
    edge.apply(snapshot(name, { records, rules: [rate, fp2, bot] }));
    assert.equal((await get(host, '/fp/a', withCookie)).status, 200);
    assert.deepEqual(last('/fp/a').rules, []);
    const elsewhere = await send(port, host, '/fp/a', { headers: withCookie, localAddress: '127.0.0.2' });
    assert.equal(elsewhere.headers['x-edge-challenge'], 'pow');
    assert.deepEqual(hitsOf(last('/fp/a')), [`fingerprint:${fp2.id}`]);

    const botPage = await get(host, '/bot/a', CURL);
    assert.deepEqual(hitsOf(last('/bot/a')), [`bot_route:${bot.id}`]);
    const botCookie = await solve(host, botPage, CURL);
    const through = await get(host, '/bot/a', { ...CURL, cookie: botCookie });
    assert.equal(through.status, 200);
    assert.equal(last('/bot/a').botClass, 'automation', 'still automation, passed by its clearance');
    const botElsewhere = await send(port, host, '/bot/a', {
      headers: { ...CURL, cookie: botCookie },
      localAddress: '127.0.0.2',
    });
    assert.equal(botElsewhere.headers['x-edge-challenge'], 'pow');
  });

  await t.test(
    'Under Attack Mode with the other types: allow passes it, block refuses first, the WAF runs after a clearance',
    async () => {
      const name = 'attacked.example.org';
      const host = `www.${name}`;
      const allow = custom('http.user_agent eq "partner-monitor/1"', 'allow', { priority: 1 });
      const block = custom('http.request.uri.path eq "/wp-login.php"', 'block', { priority: 2 });
      const waf = rule('waf', { paranoia_level: 1 });
      edge.apply(
        snapshot(name, {
          records: [proxiedRecord('www', origin.port)],
          rules: [allow, block, waf],
          settings: { underAttack: true },
        }),
      );
      logs();
      const challenged = await get(host, BENIGN, BROWSER);
      assert.deepEqual(hitsOf(last('/search')), ['under_attack:0']);
      assert.equal((await get(host, '/wp-login.php', BROWSER)).body, 'blocked by a custom rule\n');
      assert.equal((await get(host, ATTACK, { ...BROWSER, 'user-agent': 'partner-monitor/1' })).status, 200);
      const cookie = await solve(host, challenged, BROWSER);
      assert.equal((await get(host, BENIGN, { ...BROWSER, cookie })).status, 200);
      const r = await get(host, ATTACK, { ...BROWSER, cookie });
      assert.equal(r.headers['x-edge-error'], 'EDGE_ERR_WAF_BLOCKED', 'a clearance is no pass for an attack');
      assert.deepEqual(hitsOf(last('/search')), [`waf:${waf.id}`]);
    },
  );

  await t.test(
    'a rule that does not compile at the edge is left out; the domain and its other rules work',
    async () => {
      const name = 'broken.example.org';
      const host = `www.${name}`;
      const good = custom('http.request.uri.path eq "/blocked"', 'block');
      // As an older or damaged config could carry it: the API would have refused this expression with a 400.
      const valid = custom('http.request.uri.path wildcard "/x/*"', 'block', { priority: 1 });
      const bad: Rule = {
        ...valid,
        body: encodeRuleBody({
          ...decodeRuleBody(valid.body),
          expression: 'http.request.uri.path wildcard "/x/*" and',
        }),
      };
      edge.apply(snapshot(name, { records: [proxiedRecord('www', origin.port)], rules: [bad, good] }));
      assert.equal((await get(host, '/x/y', BROWSER)).status, 200);
      assert.equal((await get(host, '/blocked', BROWSER)).status, 403);
      // The same rule with its expression whole acts.
      edge.apply(snapshot(name, { records: [proxiedRecord('www', origin.port)], rules: [valid, good] }));
      assert.equal((await get(host, '/x/y', BROWSER)).status, 403);
    },
  );
});
