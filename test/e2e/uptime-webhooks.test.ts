// Uptime webhooks end to end: the control plane, a Temporal dev server and the workers as users start them, and a
// real receiver on loopback (the worker runs with ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8, as an operator allows an
// internal receiver). Signed headers and body; a timeout (the spec's 5 s), a redirect and a 500 retried on the
// worker's schedule, here shortened to 1 s and 3 s (UPTIME_WEBHOOK_RETRY_DELAYS_MS; the spec's 5 s and 30 s are its
// default, asserted in workflows/src/config.test.ts and uptime/webhook-activities.test.ts); a worker stopped between
// two attempts delivers once started again; without the allowlist the receiver is refused, once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { eventually, startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';

interface Received {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver: records every request and answers from a script (default 204). */
class Receiver {
  readonly received: Received[] = [];
  /** Answers for the next requests, in order: a status, or 'hang' (answers after 6 s). */
  script: (number | 'hang')[] = [];
  private server!: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({
          at: Date.now(),
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const next = this.script.shift() ?? 204;
        if (next === 'hang') {
          setTimeout(() => res.writeHead(204).end(), 6000).unref();
          return;
        }
        if (next >= 300 && next < 400) res.writeHead(next, { location: '/elsewhere' }).end();
        else res.writeHead(next).end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** The retries' delays the worker is given (ms). */
const RETRY_DELAYS = [1000, 3000] as const;
const workerEnv: Record<string, string> = {
  ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
  UPTIME_WEBHOOK_RETRY_DELAYS_MS: RETRY_DELAYS.join(','),
};
const domain = 'hooks.example.org';
const q = `?domain=${domain}`;
let L: Lifecycle;
let rx: Receiver;
let secret: string;

before(async () => {
  rx = new Receiver();
  await rx.start();
  L = await startLifecycle('uptime-hooks', {}, { workerEnv });
  assert.equal((await L.api('POST', '/domains/', { name: domain })).status, 200);
  const saved = await L.api('PUT', `/uptime/settings${q}`, {
    webhook_url: `http://127.0.0.1:${rx.port}/hook?src=uptime`,
    notify_webhook: true,
  });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  secret = (await L.api('GET', `/uptime/webhook${q}`)).body.signing_secret;
});
after(async () => {
  await L?.close();
  await rx?.close();
});

async function sendTest(): Promise<number> {
  const res = await L.api('POST', `/uptime/webhook/test${q}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.id as number;
}

interface Attempt {
  attempt: number;
  status_code: number | null;
  outcome: string;
  error: string | null;
}
interface Delivery {
  id: number;
  state: string;
  redelivery_of: number | null;
  attempts: Attempt[];
}

async function delivery(id: number): Promise<Delivery | undefined> {
  const list = (await L.api('GET', `/uptime/webhook/deliveries${q}`)).body as Delivery[];
  return list.find((d) => d.id === id);
}

async function settled(id: number, ms = 90_000) {
  return eventually(
    `delivery ${id} to settle`,
    async () => {
      const d = await delivery(id);
      return d && d.state !== 'pending' ? d : undefined;
    },
    ms,
  );
}

test('a test event arrives signed, with every header and body field of the spec', async () => {
  const from = rx.received.length;
  const id = await sendTest();
  const d = await settled(id);
  assert.equal(d.state, 'delivered');
  assert.equal(d.attempts.length, 1);
  assert.deepEqual([d.attempts[0].status_code, d.attempts[0].outcome, d.attempts[0].error], [204, 'success', null]);
  assert.equal(rx.received.length, from + 1);
  const r = rx.received[from];
  assert.equal(r.path, '/hook?src=uptime');
  assert.equal(r.headers['user-agent'], 'Service-Uptime-Webhook/1');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['x-service-event'], 'test');
  const ts = r.headers['x-service-timestamp'] as string;
  assert.match(ts, /^\d+$/);
  assert.ok(Math.abs(Number(ts) - Date.now() / 1000) < 120);
  const expected = `sha256=${createHmac('sha256', secret).update(`${ts}.${r.body}`).digest('hex')}`;
  assert.equal(r.headers['x-service-signature'], expected);
  const body = JSON.parse(r.body);
  assert.deepEqual(Object.keys(body), [
    'event',
    'incident_id',
    'domain',
    'hostname',
    'monitor_id',
    'scope',
    'peak_error_pct',
    'started_at',
    'resolved_at',
    'duration_sec',
    'sent_at',
  ]);
  assert.equal(body.event, 'test');
  assert.equal(body.incident_id, 0);
  assert.equal(body.domain, domain);
  assert.equal(body.monitor_id, null);
  assert.equal(body.resolved_at, null);
  assert.equal(body.duration_sec, null);
  assert.equal(Date.parse(body.sent_at), Number(ts) * 1000, 'sent_at is the X-Service-Timestamp instant');

  // A new secret signs the next delivery.
  const rotated = (await L.api('POST', `/uptime/webhook/secret${q}`)).body.signing_secret as string;
  const id2 = await sendTest();
  assert.equal((await settled(id2)).state, 'delivered');
  const r2 = rx.received[rx.received.length - 1];
  const ts2 = r2.headers['x-service-timestamp'] as string;
  assert.equal(
    r2.headers['x-service-signature'],
    `sha256=${createHmac('sha256', rotated).update(`${ts2}.${r2.body}`).digest('hex')}`,
  );
  secret = rotated;
});

test('no answer within 5 s, then a redirect (not followed), are retried after the first and the second delay', async () => {
  const from = rx.received.length;
  rx.script = ['hang', 302, 200];
  const id = await sendTest();
  const d = await settled(id, 120_000);
  assert.equal(d.state, 'delivered');
  const got = rx.received.slice(from);
  assert.deepEqual(
    got.map((r) => r.path),
    ['/hook?src=uptime', '/hook?src=uptime', '/hook?src=uptime'],
    'three attempts, the redirect never followed to /elsewhere',
  );
  assert.deepEqual(
    d.attempts.map((a) => [a.attempt, a.status_code, a.outcome]),
    [
      [1, null, 'failure'],
      [2, 302, 'failure'],
      [3, 200, 'success'],
    ],
  );
  assert.equal(d.attempts[0].error, 'no answer within 5 s');
  assert.match(String(d.attempts[1].error), /^answered 302 \(redirects are not followed; Location: \/elsewhere\)$/);
  // The retries wait the two delays after the attempt before them ended (the first ended at its 5 s timeout).
  const gap1 = got[1].at - got[0].at;
  const gap2 = got[2].at - got[1].at;
  assert.ok(gap1 >= 5_000 + RETRY_DELAYS[0] - 250, `second attempt ${gap1} ms after the first (5 s timeout + delay)`);
  assert.ok(gap2 >= RETRY_DELAYS[1] - 250, `third attempt ${gap2} ms after the second`);
  // Each attempt is signed with its own timestamp.
  assert.notEqual(got[0].headers['x-service-timestamp'], got[2].headers['x-service-timestamp']);
});

test('three failures: the delivery fails after the last retry, with every attempt in the log', async () => {
  rx.script = [500, 503, 500];
  const id = await sendTest();
  const d = await settled(id, 120_000);
  assert.equal(d.state, 'failed');
  assert.deepEqual(
    d.attempts.map((a) => [a.status_code, a.outcome, a.error]),
    [
      [500, 'failure', 'answered 500'],
      [503, 'failure', 'answered 503'],
      [500, 'failure', 'answered 500'],
    ],
  );
  assert.equal(await L.temporal.client.workflow.getHandle(`uptime-webhook:${id}`).result(), 'failed');
  // Manual redelivery sends the same body again as a new delivery.
  const re = await L.api('POST', `/uptime/webhook/deliveries/${id}/redeliver${q}`);
  assert.equal(re.status, 200);
  const again = await settled(re.body.id);
  assert.equal(again.state, 'delivered');
  assert.equal(again.redelivery_of, id);
});

test('a worker killed (SIGKILL) between two attempts delivers once started again', async () => {
  const from = rx.received.length;
  rx.script = [500];
  const id = await sendTest();
  await eventually('the first attempt to be recorded', async () => {
    const d = await delivery(id);
    return d?.attempts.length === 1 ? true : undefined;
  });
  await L.stopWorker('SIGKILL');
  // Past the first retry's time (the first delay, and a second more).
  await new Promise((r) => setTimeout(r, RETRY_DELAYS[0] + 1000));
  assert.equal(rx.received.length, from + 1, 'nothing is sent while no worker runs');
  await L.startWorker();
  const d = await settled(id);
  assert.equal(d.state, 'delivered');
  assert.deepEqual(
    d.attempts.map((a) => [a.attempt, a.status_code]),
    [
      [1, 500],
      [2, 204],
    ],
  );
  assert.equal(rx.received.length, from + 2);
});

test('without ALLOWED_PRIVATE_NETWORKS the loopback receiver is refused, without retrying', async () => {
  delete workerEnv.ALLOWED_PRIVATE_NETWORKS;
  await L.stopWorker();
  await L.startWorker();
  const from = rx.received.length;
  const id = await sendTest();
  const d = await settled(id);
  assert.equal(d.state, 'refused');
  assert.equal(d.attempts.length, 1);
  assert.equal(d.attempts[0].outcome, 'refused');
  assert.equal(d.attempts[0].status_code, null);
  assert.equal(d.attempts[0].error, 'refused: 127.0.0.1 is a loopback address');
  assert.equal(await L.temporal.client.workflow.getHandle(`uptime-webhook:${id}`).result(), 'refused');
  // Past the first retry's time (the first delay, and a second more): no second attempt.
  await new Promise((r) => setTimeout(r, RETRY_DELAYS[0] + 1000));
  assert.equal((await delivery(id))?.attempts.length, 1);
  assert.equal(rx.received.length, from, 'the receiver got nothing');
});
