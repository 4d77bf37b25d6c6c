// Delivery refuses internal destinations: an MX (or a domain without MX) that resolves to loopback, private,
// link-local (cloud metadata) or the platform's own addresses is never connected to unless the operator allows it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { AddressPolicy, parseNetworks } from '@platform/shared/address-policy';
import { startStubDns } from '../../test/helpers/stub-dns.js';
import { deliver, mailResolver, mxHosts, type DeliveryContext } from './deliver.js';

test('abuse: mail is never delivered to an internal address, whatever the MX says', { timeout: 60_000 }, async (t) => {
  const dns = await startStubDns();
  t.after(() => dns.close());
  let connections = 0;
  const trap = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', () => r()));
  t.after(() => trap.close());
  const port = (trap.address() as { port: number }).port;
  dns.set('loop.test', 'MX', ['10 mx.loop.test']);
  dns.set('mx.loop.test', 'A', ['127.0.0.1']);
  dns.set('private.test', 'MX', ['10 mx.private.test', '20 meta.private.test']);
  dns.set('mx.private.test', 'A', ['10.1.2.3']);
  dns.set('meta.private.test', 'A', ['169.254.169.254']);
  dns.set('nomx.test', 'A', ['192.168.1.1']);
  dns.set('literal.test', 'MX', ['10 127.0.0.1']);
  const ctx: DeliveryContext = {
    resolver: mailResolver([dns.address]),
    policy: new AddressPolicy([]),
    port,
    ehloName: 'mx.test',
    timeoutMs: 2000,
  };
  const raw = Buffer.from('Subject: x\r\n\r\nx\r\n');
  for (const to of ['a@loop.test', 'a@private.test', 'a@nomx.test', 'a@literal.test']) {
    const r = await deliver(ctx, { from: 'b@sender.test', to, raw });
    assert.equal(r.ok, false, to);
    assert.ok(!r.ok && !r.temporary && r.code === 550, `${to}: ${JSON.stringify(r)}`);
    assert.match(!r.ok ? r.response : '', /internal address/);
  }
  assert.equal(connections, 0);
  // The operator's allowance (the tests' sink) opens loopback only.
  const allowed = { ...ctx, policy: new AddressPolicy(parseNetworks('127.0.0.0/8').ranges) };
  const r = await deliver(allowed, { from: 'b@sender.test', to: 'a@loop.test', raw });
  assert.equal(r.ok, false);
  assert.equal(connections, 1);
  // A null MX is a permanent refusal; a domain with many MX records costs at most MAX_MX_HOSTS hosts.
  dns.set('null.test', 'MX', ['0 .']);
  await assert.rejects(mxHosts(ctx.resolver, 'null.test'), /null MX/);
  dns.set(
    'many.test',
    'MX',
    Array.from({ length: 50 }, (_, i) => `${i} mx${i}.many.test`),
  );
  assert.equal((await mxHosts(ctx.resolver, 'many.test')).length, 5);
});
