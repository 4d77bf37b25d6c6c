// The uptime end-to-end tests' common ground: the control plane, a Temporal dev server and the worker (the workflow
// harness) with the edge's sync port and loopback origins allowed, a webhook receiver on loopback recording what it
// gets, and the checks of a delivery's signature.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';
import { startStubOrigin, type StubOrigin } from '../../edge-node/src/testing/harness.js';
import { freePort } from './sync-harness.js';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

export interface UptimeLifecycle {
  L: Lifecycle;
  /** The hub's port, for startEdgeNodeProcess. */
  syncPort: number;
  /** The receiver's port on 127.0.0.1 (it answers 204 to anything). */
  receiverPort: number;
  /** Every request the receiver got, in order. */
  received: Received[];
  close(): Promise<void>;
}

/** `cpEnv`: more settings of the control plane. */
export async function startUptimeLifecycle(name: string, cpEnv: Record<string, string> = {}): Promise<UptimeLifecycle> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const receiverPort = (server.address() as { port: number }).port;
  const syncPort = await freePort();
  const L = await startLifecycle(
    name,
    // The edge test's origin is a stub on loopback.
    { SYNC_PORT: String(syncPort), ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8', ...cpEnv },
    { workerEnv: { ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8' } },
  );
  return {
    L,
    syncPort,
    receiverPort,
    received,
    async close() {
      await L.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A stub origin on loopback answering 200, or 5xx while `failing` is set. */
export async function flippingOrigin(name: string): Promise<StubOrigin & { failing: boolean }> {
  const origin: StubOrigin & { failing: boolean } = Object.assign(
    await startStubOrigin(name, (_req, res) => {
      res.statusCode = origin.failing ? 503 : 200;
      res.end(origin.failing ? 'down' : 'ok');
    }),
    { failing: false },
  );
  return origin;
}

/** A new domain with a proxied `www` record on the origin at 127.0.0.1:`port`, `monitor` on. */
export async function watchedDomain(L: Lifecycle, name: string, port: number): Promise<void> {
  assert.equal((await L.api('POST', '/domains/', { name })).status, 200);
  const rec = await L.api('POST', `/domains/${name}/records/`, {
    name: 'www',
    type: 'A',
    destination: '127.0.0.1',
    proxied: true,
    scheme: 'Http',
    port,
    monitor: true,
  });
  assert.equal(rec.status, 200, JSON.stringify(rec.body));
}

/** Asserts the delivery's X-Service-Signature is the HMAC of its timestamp and body under `secret`. */
export function assertSigned(delivery: Received, secret: string): void {
  const ts = delivery.headers['x-service-timestamp'] as string;
  assert.equal(
    delivery.headers['x-service-signature'],
    `sha256=${createHmac('sha256', secret).update(`${ts}.${delivery.body}`).digest('hex')}`,
  );
}
