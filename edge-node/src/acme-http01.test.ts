// ACME http-01 through a running edge: the published key authorization is answered for its own hostname and token
// only, before any rule (a drop rule, Under Attack Mode) and without reaching the origin; every other token, hostname,
// method or path shape goes on like any request (the origin gets it); nothing else can be read through the path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';
import type { DomainSnapshot } from '@platform/shared/config';

const TOKEN = 'evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA';
const THUMB = 'nP1qzpXGymHBrUEepNY9HCsQk7K8KhOypzEt62jcerQ';
const KEY_AUTH = `${TOKEN}.${THUMB}`;

test('http-01 key authorizations at the edge', async (t) => {
  const origin = await startStubOrigin('origin');
  t.after(() => origin.close());
  const withChallenges = (s: DomainSnapshot, list: DomainSnapshot['acmeHttpChallenges']) => ({
    ...s,
    acmeHttpChallenges: list,
  });
  const shop = withChallenges(
    snapshot('shop.example.org', {
      records: [proxiedRecord('www', origin.port), proxiedRecord('api', origin.port)],
      // Every request of the domain is dropped by a rule, and the domain is under attack: the CA still gets its answer.
      rules: [rule('drop', { path_includes: ['/*'], status_code: 403, body: 'dropped' })],
      settings: { underAttack: true },
    }),
    [{ hostname: 'www.shop.example.org', token: TOKEN, keyAuthorization: KEY_AUTH }],
  );
  const other = snapshot('other.example.net', { records: [proxiedRecord('www', origin.port)] });
  const edge = await startTestEdge(t, [shop, other]);
  const port = edge.node.server.httpPort;
  const path = `/.well-known/acme-challenge/${TOKEN}`;

  const ok = await send(port, 'www.shop.example.org', path);
  assert.equal(ok.status, 200);
  assert.equal(ok.body, KEY_AUTH);
  assert.equal(ok.headers['cache-control'], 'no-store');
  assert.match(String(ok.headers['content-type']), /^text\/plain/);
  // Over HTTPS too (a CA following a redirect), and HEAD without a body.
  assert.equal((await send(edge.node.server.httpsPort, 'www.shop.example.org', path, { https: true })).body, KEY_AUTH);
  const head = await send(port, 'www.shop.example.org', path, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.equal(origin.seen.length, 0);

  // The same token on another hostname of the domain, or of another domain, is not answered: rules apply (dropped)
  // or the origin gets the request.
  assert.equal((await send(port, 'api.shop.example.org', path)).status, 403);
  const elsewhere = await send(port, 'www.other.example.net', path);
  assert.notEqual(elsewhere.body, KEY_AUTH);
  assert.equal(origin.seen.at(-1)?.url, path);

  // Abuse of the path: other tokens, prefixes, suffixes, traversal, encodings, overlong and odd characters never get
  // the key authorization or anything but the domain's ordinary handling (here: the drop rule, 403 'dropped').
  const abuse = [
    `/.well-known/acme-challenge/${TOKEN.slice(0, -1)}`,
    `/.well-known/acme-challenge/${TOKEN}x`,
    `/.well-known/acme-challenge/${TOKEN}/`,
    `/.well-known/acme-challenge/${TOKEN}/..`,
    `/.well-known/acme-challenge/${TOKEN}.${THUMB}`,
    `/.well-known/acme-challenge/${TOKEN}%00`,
    `/.well-known/acme-challenge/${encodeURIComponent(TOKEN + '/../../etc/passwd')}`,
    `/.well-known/acme-challenge/../../etc/passwd`,
    `/.well-known/acme-challenge/..%2f..%2fetc%2fpasswd`,
    `/.well-known/acme-challenge/`,
    `/.well-known/acme-challenge`,
    `/.well-known/acme-challenge/${'A'.repeat(129)}`,
    `/.well-known/acme-challenge/${'A'.repeat(100_000)}`,
    `/.well-known/acme-challenge/*`,
    `/.well-known/ACME-CHALLENGE/${TOKEN}`,
  ];
  for (const p of abuse) {
    // A request line too long for the edge may be refused or cut: either way no key authorization.
    const r = await send(port, 'www.shop.example.org', p).catch(() => ({ status: 0, body: '' }));
    assert.notEqual(r.body, KEY_AUTH, p.slice(0, 80));
    assert.ok([0, 400, 403, 414, 431].includes(r.status), `${p.slice(0, 80)}: ${r.status}`);
  }
  // The token with a query string is still the token (a CA sends none; the answer is the same).
  assert.equal((await send(port, 'www.shop.example.org', `${path}?x=1`)).body, KEY_AUTH);
  // Methods other than GET and HEAD are not answered.
  assert.equal((await send(port, 'www.shop.example.org', path, { method: 'POST', body: 'x' })).status, 403);

  // Withdrawn: the next snapshot without it, and the path is the domain's again.
  edge.apply(withChallenges(shop, []));
  const gone = await send(port, 'www.shop.example.org', path);
  assert.equal(gone.status, 403);
  assert.notEqual(gone.body, KEY_AUTH);
});
