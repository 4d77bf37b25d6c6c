// Cache poisoning (issue 10 item 4) through a running edge node and a stub origin on 127.0.0.1: each attack stores
// an answer meant for one client and checks that another client is not handed it. Another tenant, with its own
// cached page, is answered in every test.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge, type Reply } from '../testing/harness.js';

const HOST = 'www.shop.example';
const OTHER = 'www.other.example';

/** The origin of both tenants: what it answers depends on the path (below), and it echoes what it was sent. */
function originHandler(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '';
  const ae = String(req.headers['accept-encoding'] ?? '');
  if (url.startsWith('/enc/')) {
    // A compressing origin that says so: the body names the coding it chose for what it was sent.
    res.setHeader('vary', 'Accept-Encoding');
    res.setHeader('cache-control', 'public, max-age=60');
    const coding = ae.includes('br') ? 'br' : ae.includes('gzip') ? 'gzip' : '';
    if (coding) res.setHeader('content-encoding', coding);
    res.end(`body:${coding || 'identity'} sent:${ae}`);
    return;
  }
  if (url.startsWith('/novary/')) {
    // Compresses but forgets Vary.
    res.setHeader('cache-control', 'public, max-age=60');
    if (ae.includes('br')) res.setHeader('content-encoding', 'br');
    res.end(`body:${ae.includes('br') ? 'br' : 'identity'}`);
    return;
  }
  if (url.startsWith('/alwaysbr/')) {
    // Sends brotli whatever it was asked for.
    res.setHeader('cache-control', 'public, max-age=60');
    res.setHeader('content-encoding', 'br');
    res.end('body:br');
    return;
  }
  if (url.startsWith('/lang/')) {
    res.setHeader('vary', 'Accept-Language');
    res.setHeader('cache-control', 'max-age=60');
    res.end(`lang:${req.headers['accept-language'] ?? '-'}`);
    return;
  }
  if (url.startsWith('/tier/')) {
    res.setHeader('vary', 'X-Tier');
    res.setHeader('cache-control', 'max-age=60');
    res.end(`tier:${req.headers['x-tier'] ?? 'public'}`);
    return;
  }
  if (url.startsWith('/star/') || url.startsWith('/cookievary/')) {
    res.setHeader('vary', url.startsWith('/star/') ? '*' : 'Cookie');
    res.setHeader('cache-control', 'max-age=60');
    res.end(`n=${Math.random()}`);
    return;
  }
  if (url.startsWith('/proto/')) {
    res.setHeader('cache-control', 'max-age=60');
    res.end(`proto:${req.headers['x-forwarded-proto']}`);
    return;
  }
  if (url.startsWith('/login/')) {
    // Signs the client in: a session cookie for whoever asked.
    res.setHeader('set-cookie', `session=${req.headers['x-user'] ?? 'anon'}; HttpOnly`);
    res.end(`welcome ${req.headers['x-user'] ?? 'anon'}`);
    return;
  }
  if (url.startsWith('/account/')) {
    // Answers for the credentials it was sent; shareable only under /account/public.
    if (url.startsWith('/account/public')) res.setHeader('cache-control', 'public, max-age=60');
    const who = req.headers.authorization ? `user:${req.headers.authorization}` : 'anonymous';
    res.end(`${who} n=${Math.random()}`);
    return;
  }
  res.setHeader('cache-control', 'max-age=60');
  res.end(`page ${req.headers.host} ${url}`);
}

async function setup(t: TestContext) {
  const origin = await startStubOrigin('o', originHandler);
  t.after(() => origin.close());
  const shopRecords = [proxiedRecord('www', origin.port)];
  const shopRules = [
    // An IP-scoped header rule: clients from 127.0.0.2 are sent to the origin as the internal tier.
    rule('header', {
      ip_includes: ['127.0.0.2'],
      request_headers: [{ op: 'set', name: 'x-tier', value: 'internal' }],
    }),
    // An IP-scoped rewrite: clients from 127.0.0.2 get the staff version of /promo/.
    rule('rewrite', { ip_includes: ['127.0.0.2'], path_includes: ['/promo/*'], path: '/staff-promo/$1' }),
    // Rules that ignore the origin's headers and keep everything for a minute.
    rule('cache', { path_includes: ['/login/*', '/account/*'], edge_ttl: 60, respect_origin: false }),
    rule('cache', { path_includes: ['/*'] }),
  ];
  const shop = (settings = {}) => snapshot('shop.example', { records: shopRecords, rules: shopRules, settings });
  const edge = await startTestEdge(t, [
    shop(),
    snapshot('other.example', {
      records: [proxiedRecord('www', origin.port)],
      rules: [rule('cache', { path_includes: ['/*'] })],
    }),
  ]);
  const port = edge.node.server.httpPort;
  const httpsPort = edge.node.server.httpsPort;
  const get = (path: string, headers: Record<string, string> = {}, opts: { https?: boolean; from?: string } = {}) =>
    send(opts.https ? httpsPort : port, HOST, path, { headers, https: opts.https, localAddress: opts.from });
  /** The other tenant: its page is cached and served whatever the attacks did. */
  const otherServed = async () => {
    const r = await send(port, OTHER, '/index.html');
    assert.equal(r.status, 200);
    assert.equal(r.body, `page ${OTHER} /index.html`);
    const again = await send(port, OTHER, '/index.html');
    assert.equal(again.headers['x-cache-status'], 'HIT');
    assert.equal(again.body, r.body);
  };
  return { origin, edge, port, httpsPort, get, otherServed, shop };
}

const status = (r: Reply) => r.headers['x-cache-status'];

test('Vary: Accept-Encoding: a brotli body is never served to a client that did not ask for it', async (t) => {
  const { origin, edge, get, otherServed } = await setup(t);
  await otherServed();

  // A brotli client fills the cache first.
  const br = await get('/enc/app.js', { 'accept-encoding': 'gzip, deflate, br' });
  assert.equal(status(br), 'MISS');
  assert.equal(br.headers['content-encoding'], 'br');
  // The attack: a gzip-only client and a client without Accept-Encoding ask for the same URL.
  const gz = await get('/enc/app.js', { 'accept-encoding': 'gzip' });
  assert.equal(status(gz), 'MISS', 'a gzip client is not served the brotli entry');
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.match(gz.body, /^body:gzip /);
  const plain = await get('/enc/app.js');
  assert.equal(status(plain), 'MISS');
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.match(plain.body, /^body:identity /);
  // Each class now hits its own entry.
  for (const [ae, coding] of [
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['', 'identity'],
  ]) {
    const r = await get('/enc/app.js', ae ? { 'accept-encoding': ae } : {});
    assert.equal(status(r), 'HIT', `accept-encoding "${ae}"`);
    assert.match(r.body, new RegExp(`^body:${coding} `));
  }
  // Accept-Encoding is normalised to three classes: other spellings hit the same entries, refusals are honoured.
  const spellings: [string, string][] = [
    ['br, gzip, zstd', 'br'],
    ['GZIP;q=0.8, BR;q=1.0', 'br'],
    ['*', 'br'],
    ['gzip, br;q=0', 'gzip'],
    ['x-gzip, deflate', 'gzip'],
    ['br', 'identity'],
    ['gzip;q=0, br', 'identity'],
    ['deflate', 'identity'],
    ['identity', 'identity'],
  ];
  for (const [ae, coding] of spellings) {
    const r = await get('/enc/app.js', { 'accept-encoding': ae });
    assert.equal(status(r), 'HIT', `accept-encoding "${ae}"`);
    assert.match(r.body, new RegExp(`^body:${coding} `), `accept-encoding "${ae}"`);
  }
  // Three entries and the marker that names Accept-Encoding; the origin only ever saw the three canonical values.
  assert.equal(edge.node.cache.stats('shop.example').entries, 4);
  const sent = new Set(origin.seen.filter((s) => s.url === '/enc/app.js').map((s) => s.headers['accept-encoding']));
  assert.deepEqual([...sent].sort(), ['br, gzip', 'gzip', 'identity']);

  // An origin that compresses without Vary: the Content-Encoding alone keys the entry on Accept-Encoding.
  assert.equal((await get('/novary/a.css', { 'accept-encoding': 'gzip, br' })).headers['content-encoding'], 'br');
  const after = await get('/novary/a.css');
  assert.equal(status(after), 'MISS');
  assert.equal(after.body, 'body:identity');
  assert.equal(after.headers['content-encoding'], undefined);
  // An origin that answers brotli to a client that cannot take it: passed through, not stored for the class.
  await get('/alwaysbr/x.js');
  assert.equal(status(await get('/alwaysbr/x.js')), 'MISS');
  await otherServed();
});

test('Vary on another header keys on its value; Vary: * and Vary: Cookie are not stored', async (t) => {
  const { edge, get, otherServed } = await setup(t);
  assert.equal((await get('/lang/home', { 'accept-language': 'fr' })).body, 'lang:fr');
  const en = await get('/lang/home', { 'accept-language': 'en' });
  assert.equal(status(en), 'MISS', 'an English reader is not served the French entry');
  assert.equal(en.body, 'lang:en');
  const none = await get('/lang/home');
  assert.equal(status(none), 'MISS');
  assert.equal(none.body, 'lang:-');
  for (const lang of ['fr', 'en']) {
    const r = await get('/lang/home', { 'accept-language': lang });
    assert.equal(status(r), 'HIT');
    assert.equal(r.body, `lang:${lang}`);
  }
  // A variant longer than the key allows is neither served from nor stored in the cache.
  const huge = 'x'.repeat(1100);
  await get('/lang/home', { 'accept-language': huge });
  const hugeAgain = await get('/lang/home', { 'accept-language': huge });
  assert.equal(status(hugeAgain), 'MISS');
  assert.equal(hugeAgain.body, `lang:${huge}`);

  // The value keyed on is what the origin was sent: a header rule scoped to 127.0.0.2 sets X-Tier: internal, and
  // a client elsewhere sending nothing (or X-Tier itself) does not get the internal page, nor the reverse.
  const internal = await get('/tier/prices', {}, { from: '127.0.0.2' });
  assert.equal(internal.body, 'tier:internal');
  const outside = await get('/tier/prices');
  assert.equal(status(outside), 'MISS');
  assert.equal(outside.body, 'tier:public');
  assert.equal(status(await get('/tier/prices', {}, { from: '127.0.0.2' })), 'HIT');
  const forged = await get('/tier/prices', { 'x-tier': 'internal' }, { from: '127.0.0.3' });
  assert.equal(forged.body, 'tier:internal', 'a client that sends the header itself gets what the origin gives it');
  assert.equal((await get('/tier/prices')).body, 'tier:public');

  // Vary: * and Vary: Cookie: never stored.
  for (const path of ['/star/x', '/cookievary/x']) {
    const a = await get(path, { cookie: 'session=alice' });
    const b = await get(path, { cookie: 'session=alice' });
    assert.equal(status(b), 'MISS', path);
    assert.notEqual(a.body, b.body, path);
  }
  // lang: a marker and 3 variants; tier: under the key with the header rule's id (127.0.0.2) a marker and the
  // internal variant, under the plain key a marker, the public variant and the one forged from 127.0.0.3.
  assert.equal(edge.node.cache.stats('shop.example').entries, 1 + 3 + 2 + 3);
  await otherServed();
});

test('http and https have separate entries; a purge drops both', async (t) => {
  const { edge, get, httpsPort, otherServed, shop } = await setup(t);
  assert.ok(httpsPort > 0, 'HTTPS is on (default certificate)');
  const plain = await get('/proto/p');
  assert.equal(plain.body, 'proto:http');
  const secure = await get('/proto/p', {}, { https: true });
  assert.equal(status(secure), 'MISS', 'an https client is not served the entry stored over http');
  assert.equal(secure.body, 'proto:https');
  assert.equal((await get('/proto/p', {}, { https: true })).body, 'proto:https');
  assert.equal(status(await get('/proto/p', {}, { https: true })), 'HIT');
  assert.equal((await get('/proto/p')).body, 'proto:http');
  assert.equal(status(await get('/proto/p')), 'HIT');
  // A selective purge names host + path: both schemes' entries go.
  edge.apply(shop({ cachePurges: [{ id: 1, prefixes: [`${HOST}/proto/`] }] }));
  assert.equal(status(await get('/proto/p')), 'MISS');
  assert.equal(status(await get('/proto/p', {}, { https: true })), 'MISS');
  await otherServed();
});

test('Set-Cookie answers are not stored, even under a rule that ignores the origin headers', async (t) => {
  const { get, otherServed } = await setup(t);
  const victim = await get('/login/', { 'x-user': 'victim' });
  assert.equal(victim.headers['set-cookie']?.[0], 'session=victim; HttpOnly');
  assert.equal(victim.body, 'welcome victim');
  const attacker = await get('/login/', { 'x-user': 'attacker' });
  assert.equal(status(attacker), 'MISS');
  assert.equal(attacker.body, 'welcome attacker');
  assert.equal(attacker.headers['set-cookie']?.[0], 'session=attacker; HttpOnly', "not the victim's session");
  await otherServed();
});

test('requests with Authorization are not stored nor served from the cache unless the origin says public', async (t) => {
  const { get, otherServed } = await setup(t);
  const alice = 'Basic YWxpY2U6cHc=';
  // A signed-in answer under a rule that ignores origin headers: not stored, the next visitor is not alice.
  const mine = await get('/account/me', { authorization: alice });
  assert.match(mine.body, /^user:Basic YWxpY2U6cHc= /);
  const anon = await get('/account/me');
  assert.equal(status(anon), 'MISS');
  assert.match(anon.body, /^anonymous /);
  // The anonymous answer is stored (the rule keeps it 60 s) but not served to a request with credentials.
  assert.equal((await get('/account/me')).body, anon.body);
  const again = await get('/account/me', { authorization: alice });
  assert.equal(status(again), 'MISS');
  assert.match(again.body, /^user:/);
  assert.equal((await get('/account/me')).body, anon.body, 'nor did that request replace the shared entry');
  // Cache-Control: public from the origin: stored, and served to requests with credentials too.
  const pub = await get('/account/public', { authorization: alice });
  const pubAgain = await get('/account/public', { authorization: 'Basic Ym9iOnB3' });
  assert.equal(status(pubAgain), 'HIT');
  assert.equal(pubAgain.body, pub.body);
  await otherServed();
});

test('an answer shaped by an address-scoped rule is not served to other addresses', async (t) => {
  const { get, otherServed } = await setup(t);
  const staff = await get('/promo/x', {}, { from: '127.0.0.2' });
  assert.equal(staff.body, `page ${HOST} /staff-promo/x`);
  const publicReply = await get('/promo/x');
  assert.equal(status(publicReply), 'MISS', 'the staff rewrite is not served to 127.0.0.1');
  assert.equal(publicReply.body, `page ${HOST} /promo/x`);
  assert.equal((await get('/promo/x', {}, { from: '127.0.0.2' })).body, staff.body);
  const again = await get('/promo/x');
  assert.equal(status(again), 'HIT');
  assert.equal(again.body, publicReply.body);
  await otherServed();
});
