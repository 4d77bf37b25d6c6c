// Issue 15 item 3 through running processes: requests through a real edge node reach the control plane in its
// request-log batches with the later fields filled by the edge (TLS, HTTP version, serving path, bytes from the
// origin, user-agent category; a rate limit's refusals with their reason, rule and key) and are answered by the
// per-domain reads of those fields.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { startControlPlane } from './sync-harness.js';
import { addProxiedRecord, startEdgeNodeProcess, waitUntil } from './edge-harness.js';

type Items = { items: ({ requests: number } & Record<string, unknown>)[] };
const count = (answer: Items, field: string, value: string) =>
  answer.items.find((i) => i[field] === value)?.requests ?? 0;

test(
  'a request through a real edge arrives with its TLS, protocol and serving path',
  { timeout: 300_000 },
  async (t) => {
    const origin = await startStubOrigin('fields-origin');
    t.after(() => origin.close());
    const cp = await startControlPlane('log-fields');
    t.after(() => cp.stop());
    const domain = 'fields.example';
    await cp.api('POST', '/domains/', { name: domain });
    await addProxiedRecord(cp, domain, 'www', origin.port);
    const edge = await startEdgeNodeProcess(cp);
    t.after(() => edge.stop());
    const www = `www.${domain}`;
    await waitUntil('the domain at the edge', async () =>
      (await send(edge.httpPort, www, '/')).status === 200 ? true : undefined,
    );

    for (let i = 0; i < 3; i++) {
      const r = await send(edge.httpPort, www, '/fields-http', { headers: { 'user-agent': 'curl/8.5.0' } });
      assert.equal(r.status, 200);
    }
    const browser =
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';
    const secure = await send(edge.httpsPort, www, '/fields-https', {
      https: true,
      headers: { 'user-agent': browser },
    });
    assert.equal(secure.status, 200);

    const read = <T>(name: string, path: string) =>
      cp.api<T>('GET', `/domains/${domain}/analytics/${name}?path=${encodeURIComponent(path)}`);
    // Shipped in the node's next batch: wait for the HTTPS request's row.
    const tls = await waitUntil(
      'the HTTPS request in the analytics store',
      async () => {
        const a = await read<Items>('tls', '/fields-https');
        return count(a, 'tls_version', 'TLS') === 1 ? a : undefined;
      },
      60_000,
    );
    assert.deepEqual(
      tls.items.map((i) => [i.tls_version, i.requests]),
      [['TLS', 1]],
    );
    const plain = await waitUntil('the HTTP requests', async () => {
      const a = await read<Items>('tls', '/fields-http');
      return count(a, 'tls_version', 'none') === 3 ? a : undefined;
    });
    assert.equal(plain.items.length, 1);

    for (const [path, n] of [
      ['/fields-http', 3],
      ['/fields-https', 1],
    ] as const) {
      const protocols = await read<Items>('protocols', path);
      assert.deepEqual(
        protocols.items.map((i) => [i.http_protocol, i.requests]),
        [['HTTP/1.1', n]],
      );
      const egress = await read<{
        serving_paths: ({ requests: number; bytes_from_origin: number } & Items['items'][0])[];
      }>('egress', path);
      assert.deepEqual(
        egress.serving_paths.map((i) => [i.serving_path, i.requests]),
        [['origin', n]],
      );
      assert.ok(egress.serving_paths[0].bytes_from_origin > 0, 'bytes received from the origin are counted');
    }
    const agents = await read<Items>('user-agents', '/fields-http');
    assert.deepEqual(
      agents.items.map((i) => [i.category, i.requests]),
      [['library', 3]],
    );
    assert.equal(count(await read<Items>('user-agents', '/fields-https'), 'category', 'browser'), 1);

    // The origin answered them all: no unserved reason.
    const unserved = await cp.api<{ unserved: number }>(
      'GET',
      `/domains/${domain}/analytics/unserved?path=/fields-http`,
    );
    assert.equal(unserved.unserved, 0);

    // A rate_limit rule through the API: its refusals arrive with their reason, rule and key.
    const rule = await cp.api<{ id: number }>('POST', `/domains/${domain}/rules/rate_limit/`, {
      requests: 2,
      period_s: 60,
      block_s: 60,
      path_includes: ['/limited/*'],
    });
    let refused = 0;
    await waitUntil('the rate limit at the edge', async () => {
      const r = await send(edge.httpPort, www, '/limited/x');
      if (r.status === 429) refused++;
      return refused > 0 ? true : undefined;
    });
    for (let i = 0; i < 3; i++) if ((await send(edge.httpPort, www, '/limited/x')).status === 429) refused++;
    assert.equal(refused, 4);
    type Keys = { requests: number; keys: { key: string; requests: number }[]; rules: { rule_id: number }[] };
    const keys = await waitUntil(
      'the refusals in the analytics store',
      async () => {
        const k = await cp.api<Keys>('GET', `/domains/${domain}/analytics/rate-limit-keys`);
        return k.requests === refused ? k : undefined;
      },
      60_000,
    );
    assert.equal(keys.keys.length, 1);
    assert.match(keys.keys[0].key, /^ip=(::ffff:)?127\.0\.0\.1$/);
    assert.deepEqual(
      keys.rules.map((r) => r.rule_id),
      [rule.id],
    );
    const reasons = await cp.api<{ reasons: { reason: string; requests: number }[] }>(
      'GET',
      `/domains/${domain}/analytics/unserved?path=/limited/x`,
    );
    assert.deepEqual(
      reasons.reasons.map((r) => [r.reason, r.requests]),
      [['rate_limited', refused]],
    );
    const egress = await cp.api<{ serving_paths: { serving_path: string; requests: number }[] }>(
      'GET',
      `/domains/${domain}/analytics/egress?path=/limited/x&unserved_reason=rate_limited`,
    );
    assert.deepEqual(
      egress.serving_paths.map((r) => [r.serving_path, r.requests]),
      [['edge', refused]],
    );
  },
);
