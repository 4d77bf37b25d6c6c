// The spec's Rule table through a running edge: host, path, IP (with canonical forms), record scope, dry_run, priority.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';

test('rule filters through the edge', async (t) => {
  const origin = await startStubOrigin('o');
  t.after(() => origin.close());
  const www = proxiedRecord('www', origin.port);
  const api = proxiedRecord('api', origin.port);
  const star = proxiedRecord('*', origin.port);
  const apex = proxiedRecord('@', origin.port);
  const hdr = (name: string, body: Record<string, unknown>) =>
    rule('header', { ...body, response_headers: [{ op: 'set', name: `x-${name}`, value: '1' }] });
  const edge = await startTestEdge(t, [
    snapshot('filters.example.org', {
      records: [www, api, star, apex],
      rules: [
        hdr('wild', { host_includes: ['*.filters.example.org'] }),
        hdr('exact', { host_match_type: 'exact', host_includes: ['api.filters.example.org'] }),
        hdr('regex', { host_match_type: 'regex', host_includes: ['^(www|x)\\.filters\\.'] }),
        hdr('excl', { host_includes: ['*.filters.example.org'], host_excludes: ['www.filters.example.org'] }),
        hdr('pattern', { host_pattern: 'filters.example.org' }),
        hdr('scoped', { record_ids: [api.id] }),
        hdr('pathwild', { path_includes: ['/img/*', '/*.css'] }),
        hdr('pathregex', { path_match_type: 'regex', path_includes: ['^/v[0-9]+/'] }),
        hdr('pathexcl', { path_includes: ['/docs/*'], path_excludes: ['/docs/private/*'] }),
        hdr('ip', { ip_includes: ['127.0.0.8/30'] }),
        hdr('ipmapped', { ip_includes: ['::ffff:127.0.0.20'] }),
        hdr('iprange', { ip_includes: ['127.0.0.40-127.0.0.30'], ip_excludes: ['127.0.0.35'] }),
        rule('drop', { action_mode: 'dry_run', path_includes: ['/dry'] }),
        rule('redirect', { priority: 50, path_includes: ['/prio'], target: '/second' }),
        rule('redirect', { priority: 10, path_includes: ['/prio'], target: '/first' }),
        rule('redirect', { priority: 1, enabled: false, path_includes: ['/prio'], target: '/disabled' }),
      ],
    }),
  ]);
  const port = edge.node.server.httpPort;
  const get = (host: string, path = '/', localAddress?: string) => send(port, host, path, { localAddress });
  const has = (r: { headers: Record<string, unknown> }, name: string) => r.headers[`x-${name}`] === '1';

  const cases: { name: string; host: string; path?: string; from?: string; header: string; want: boolean }[] = [
    { name: 'wildcard matches a subdomain', host: 'a.filters.example.org', header: 'wild', want: true },
    { name: 'wildcard does not match the apex', host: 'filters.example.org', header: 'wild', want: false },
    { name: 'exact matches its host', host: 'api.filters.example.org', header: 'exact', want: true },
    { name: 'exact does not match another host', host: 'www.filters.example.org', header: 'exact', want: false },
    { name: 'regex matches', host: 'www.filters.example.org', header: 'regex', want: true },
    { name: 'regex does not match', host: 'api.filters.example.org', header: 'regex', want: false },
    { name: 'excludes beat includes', host: 'www.filters.example.org', header: 'excl', want: false },
    { name: 'includes still apply outside the exclude', host: 'api.filters.example.org', header: 'excl', want: true },
    { name: 'host_pattern is one more include', host: 'filters.example.org', header: 'pattern', want: true },
    {
      name: 'host_pattern alone does not match others',
      host: 'api.filters.example.org',
      header: 'pattern',
      want: false,
    },
    { name: 'record_ids scope: its record', host: 'api.filters.example.org', header: 'scoped', want: true },
    { name: 'record_ids scope: another record', host: 'www.filters.example.org', header: 'scoped', want: false },
    {
      name: 'path wildcard prefix',
      host: 'www.filters.example.org',
      path: '/img/a/b.png',
      header: 'pathwild',
      want: true,
    },
    {
      name: 'path wildcard suffix',
      host: 'www.filters.example.org',
      path: '/a/site.css',
      header: 'pathwild',
      want: true,
    },
    { name: 'path wildcard miss', host: 'www.filters.example.org', path: '/img', header: 'pathwild', want: false },
    { name: 'path regex', host: 'www.filters.example.org', path: '/v2/users', header: 'pathregex', want: true },
    { name: 'path regex miss', host: 'www.filters.example.org', path: '/vx/users', header: 'pathregex', want: false },
    {
      name: 'path excludes beat includes',
      host: 'www.filters.example.org',
      path: '/docs/private/x',
      header: 'pathexcl',
      want: false,
    },
    {
      name: 'path include outside exclude',
      host: 'www.filters.example.org',
      path: '/docs/public',
      header: 'pathexcl',
      want: true,
    },
    {
      name: 'path query is not part of the path',
      host: 'www.filters.example.org',
      path: '/img/x?y=/z',
      header: 'pathwild',
      want: true,
    },
    {
      name: 'IP CIDR include (masked 127.0.0.8/30)',
      host: 'www.filters.example.org',
      from: '127.0.0.10',
      header: 'ip',
      want: true,
    },
    { name: 'IP CIDR outside', host: 'www.filters.example.org', from: '127.0.0.12', header: 'ip', want: false },
    {
      name: 'IPv4-mapped entry matches the IPv4 peer',
      host: 'www.filters.example.org',
      from: '127.0.0.20',
      header: 'ipmapped',
      want: true,
    },
    {
      name: 'IP range written high-low',
      host: 'www.filters.example.org',
      from: '127.0.0.31',
      header: 'iprange',
      want: true,
    },
    {
      name: 'IP exclude beats the range',
      host: 'www.filters.example.org',
      from: '127.0.0.35',
      header: 'iprange',
      want: false,
    },
    {
      name: 'IP outside every list',
      host: 'www.filters.example.org',
      from: '127.0.0.1',
      header: 'iprange',
      want: false,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      const r = await get(c.host, c.path ?? '/', c.from);
      assert.equal(r.status, 200);
      assert.equal(has(r, c.header), c.want);
    });
  }

  await t.test('dry_run logs the would-have-acted hit and passes the request unchanged', async () => {
    const r = await get('www.filters.example.org', '/dry');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'origin o /dry');
    const logged = edge.node.logs.drain().find((l) => l.path === '/dry');
    assert.ok(logged);
    assert.ok(logged.rules.some(([, type, dry]) => type === 'drop' && dry));
  });

  await t.test('lower priority acts first; disabled rules are ignored', async () => {
    const r = await get('www.filters.example.org', '/prio');
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, '/first');
  });
});
