// Issue 10 item 1: a tenant's origin can never be the platform's inside. Each attack goes through a running edge node,
// and another tenant's request is answered in the same test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';

test('SSRF: internal origins are refused with 502, allowed ones still answer', async (t) => {
  // "Internal service" on 127.0.0.1 (the control plane, a metadata endpoint…); a tenant's real origin on 127.0.0.2,
  // the only range this operator allows.
  const internal = await startStubOrigin('internal');
  const good = await startStubOrigin('good', undefined, '127.0.0.2');
  t.after(() => internal.close());
  t.after(() => good.close());
  const edge = await startTestEdge(
    t,
    [
      snapshot('victim.example', { records: [proxiedRecord('www', good.port, { destination: '127.0.0.2' })] }),
      snapshot('attacker.example', {
        state: 'unverified',
        records: [
          proxiedRecord('loop', internal.port),
          proxiedRecord('mapped', internal.port, { type: 'AAAA', destination: '::ffff:7f00:1' }),
          proxiedRecord('name', internal.port, { type: 'CNAME', destination: 'localhost.' }),
          proxiedRecord('meta', 80, { destination: '169.254.169.254' }),
          proxiedRecord('zero', internal.port, { destination: '0.0.0.0' }),
          proxiedRecord('routed', good.port, { destination: '127.0.0.2' }),
          proxiedRecord('pool', good.port, { destination: '127.0.0.2' }),
        ],
        rules: [
          rule('origin_route', {
            host_includes: ['routed.attacker.example'],
            address: '127.0.0.1',
            port: internal.port,
          }),
          rule('origin_pool', {
            host_includes: ['pool.attacker.example'],
            method: 'failover',
            origins: [
              { address: '10.0.0.1', port: 80 },
              { address: '127.0.0.1', port: internal.port },
              { address: '127.0.0.2', port: good.port },
            ],
            health_check: { path: '/health', interval_s: 1 },
          }),
        ],
      }),
    ],
    { ALLOWED_PRIVATE_NETWORKS: '127.0.0.2/32' },
  );
  const port = edge.node.server.httpPort;

  for (const [host, shown] of [
    ['loop.attacker.example', /127\.0\.0\.1 is a loopback address/],
    ['mapped.attacker.example', /::ffff:7f00:1 is a loopback address/],
    ['name.attacker.example', /localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
    ['meta.attacker.example', /169\.254\.169\.254 is a link-local address/],
    ['zero.attacker.example', /0\.0\.0\.0 is an unspecified/],
    ['routed.attacker.example', /127\.0\.0\.1 is a loopback address/],
  ] as const) {
    const r = await send(port, host, '/openapi.json');
    assert.equal(r.status, 502, host);
    assert.equal(r.headers['x-edge-error'], 'EDGE_ERR_ORIGIN_REFUSED', host);
    assert.match(r.body, shown, host);
  }
  // A pool fails over past its refused origins to the allowed one.
  const pooled = await send(port, 'pool.attacker.example', '/p');
  assert.equal(pooled.status, 200);
  assert.equal(pooled.body, 'origin good /p');

  const other = await send(port, 'www.victim.example', '/still-served');
  assert.equal(other.status, 200);
  assert.equal(other.body, 'origin good /still-served');

  // Health probes go through the same check: the allowed origin is probed, the internal one never is.
  await waitFor(() => good.seen.some((s) => s.url === '/health'));
  assert.deepEqual(internal.seen, [], 'nothing reached the internal service');
});

test('SSRF: the edge itself and the platform endpoints stay refused inside an allowed range', async (t) => {
  const hub = await startStubOrigin('hub'); // stands for the sync hub the node connects to
  const good = await startStubOrigin('good');
  t.after(() => hub.close());
  t.after(() => good.close());
  const edge = await startTestEdge(t, [], {
    ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
    SYNC_URL: `ws://127.0.0.1:${hub.port}`,
  });
  const port = edge.node.server.httpPort;
  edge.apply(
    snapshot('loop.example', {
      records: [proxiedRecord('self', port), proxiedRecord('hub', hub.port), proxiedRecord('ok', good.port)],
    }),
  );
  const self = await send(port, 'self.loop.example', '/');
  assert.equal(self.status, 502);
  assert.match(self.body, new RegExp(`127\\.0\\.0\\.1 is an address of the platform itself \\(port ${port}\\)`));
  const toHub = await send(port, 'hub.loop.example', '/');
  assert.equal(toHub.status, 502);
  assert.equal(toHub.headers['x-edge-error'], 'EDGE_ERR_ORIGIN_REFUSED');
  assert.equal((await send(port, 'ok.loop.example', '/')).status, 200);
  edge.apply(snapshot('neighbour.example', { records: [proxiedRecord('www', good.port)] }));
  const other = await send(port, 'www.neighbour.example', '/n');
  assert.equal(other.status, 200, 'another tenant');
  assert.equal(other.body, 'origin good /n');
  assert.deepEqual(hub.seen, []);
});

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(cond(), 'condition not reached within 10 s');
}
