// Issue 10 item 8: attacks on a running DNS node over real sockets on 127.0.0.0/8, each with another client's queries
// answered in the same test. A second source address is a client socket bound to 127.0.0.2 or 127.0.1.1 (Linux
// routes all of 127.0.0.0/8 to lo). RRL buckets are per /24, so 127.0.1.1 is "another network" and 127.0.0.2 is not.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode } from '../../dns-server/src/testing/decode.js';
import { dataDirWith, record as r, removeDir, snapshot, startDnsProcess, type DnsProcess } from './dns-helpers.js';
import { freePort } from './sync-harness.js';

const A = 1,
  TXT = 16;
const RATE = 20;
const SLIP = 3;

/** RRL at RATE/SLIP, 1 s per TCP query. */
let dns: DnsProcess;
/** RRL off, 5 s per TCP query (the per-client test holds connections idle). */
let dnsOff: DnsProcess;
let dataDir: string;
const metricsPorts: number[] = [];

before(async () => {
  dataDir = await dataDirWith([
    snapshot('example.org', [
      r('www', 'A', '192.0.2.10'),
      r('big', 'TXT', 'a'.repeat(250)),
      r('big', 'TXT', 'b'.repeat(250)),
      r('big', 'TXT', 'c'.repeat(250)),
      r('big', 'TXT', 'd'.repeat(250)),
    ]),
  ]);
  const env = { DATA_DIR: dataDir, SYNC_URL: 'off', DNS_TCP_MAX_PER_CLIENT: '4' };
  metricsPorts.push(await freePort(), await freePort());
  [dns, dnsOff] = await Promise.all([
    startDnsProcess({
      ...env,
      DNS_TCP_IDLE_MS: '1000',
      DNS_RRL_RATE: String(RATE),
      DNS_RRL_SLIP: String(SLIP),
      DNS_RRL_EXEMPT: '127.0.2.0/24',
      DNS_METRICS_PORT: String(metricsPorts[0]),
    }),
    startDnsProcess({
      ...env,
      DNS_TCP_IDLE_MS: '5000',
      DNS_RRL_RATE: '0',
      DNS_METRICS_PORT: String(metricsPorts[1]),
    }),
  ]);
});

after(async () => {
  await dns?.stop();
  await dnsOff?.stop();
  removeDir(dataDir);
});

function tcpConnect(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', localAddress });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves when the server closes the socket (reset or FIN); rejects if it is still open after 5 s. */
function closed(s: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    if (s.destroyed) resolve();
    const timer = setTimeout(() => reject(new Error('the server kept the connection open for 5 s')), 5000);
    s.on('error', () => undefined);
    s.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** One query over an open TCP connection; resolves with the answer, rejects if closed or silent for 5 s. */
function tcpAsk(s: Socket, q: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (s.destroyed) return reject(new Error('already closed'));
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error('no answer within 5 s')), 5000);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        s.off('data', onData);
        clearTimeout(timer);
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    };
    s.on('data', onData);
    s.once('close', () => {
      clearTimeout(timer);
      reject(new Error('closed before the answer'));
    });
    s.write(Buffer.concat([Buffer.from([q.length >> 8, q.length & 0xff]), q]));
  });
}

async function udpSocket(address: string): Promise<UdpSocket> {
  const sock = createSocket({ type: address.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 1 << 22 });
  await new Promise<void>((resolve) => sock.bind(0, address, () => resolve()));
  return sock;
}

/**
 * Sends `count` queries (`q`, or `q(i)`) from `sock` in small batches, then collects the answers until none came for
 * 300 ms. `spanMs`: from the first send to the last answer, the longest the server can have spent answering them (on a
 * loaded machine it answers well after the last send, and its buckets refill meanwhile).
 */
async function udpBurst(
  sock: UdpSocket,
  port: number,
  q: Buffer | ((i: number) => Buffer),
  count: number,
  server = '127.0.0.1',
): Promise<Buffer[] & { spanMs: number }> {
  const answers = Object.assign([] as Buffer[], { spanMs: 0 });
  const start = performance.now();
  const onMessage = (m: Buffer) => {
    answers.push(m);
    answers.spanMs = performance.now() - start;
  };
  sock.on('message', onMessage);
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      Array.from(
        { length: Math.min(25, count - i) },
        (_, k) =>
          new Promise<void>((resolve) =>
            sock.send(typeof q === 'function' ? q(i + k) : q, port, server, () => resolve()),
          ),
      ),
    );
    await new Promise((res) => setImmediate(res));
  }
  for (let last = -1, waited = 0; answers.length !== last && waited < 5000; waited += 300) {
    last = answers.length;
    await new Promise((res) => setTimeout(res, 300));
  }
  sock.off('message', onMessage);
  return answers;
}

/** Most answers a fresh bucket gives during a burst answered within `ms`: RATE at once and RATE per second after that. */
function refilled(ms: number): number {
  return RATE + Math.ceil((RATE * (ms + 20)) / 1000) + 1;
}

async function udpAsk(sock: UdpSocket, port: number, q: Buffer): Promise<Buffer | null> {
  const [a] = await udpBurst(sock, port, q, 1);
  return a ?? null;
}

test('slowloris: a TCP client dribbling one byte every 300 ms is closed after the per-query time (1 s), not kept', async () => {
  const slow = await tcpConnect(dns.port, '127.0.0.2');
  const gone = closed(slow);
  const q = buildQuery('www.example.org', A);
  const framed = Buffer.concat([Buffer.from([q.length >> 8, q.length & 0xff]), q]);
  let sent = 0;
  let answered = false;
  slow.on('data', () => {
    answered = true;
  });
  // Before the fix every byte reset the idle timer, so this connection lived as long as the client liked.
  const dribble = (async () => {
    for (; sent < framed.length && !slow.destroyed; sent++) {
      slow.write(framed.subarray(sent, sent + 1));
      await new Promise((res) => setTimeout(res, 300));
    }
  })();
  // Meanwhile another client is answered, and a client sending a whole query every 300 ms keeps its connection.
  const other = await tcpConnect(dns.port, '127.0.1.1');
  for (let i = 0; i < 4; i++) {
    const answer = decode(await tcpAsk(other, buildQuery('www.example.org', A, { id: 500 + i })));
    assert.deepEqual(answer.answer, ['www.example.org 300 A 192.0.2.10']);
    await new Promise((res) => setTimeout(res, 300));
  }
  assert.equal(other.destroyed, false, 'a client sending whole queries is kept');
  other.destroy();
  await gone;
  await dribble;
  assert.equal(answered, false);
  assert.ok(sent < framed.length, `closed after ${sent} of ${framed.length} bytes`);
});

test('one address opening more TCP connections than DNS_TCP_MAX_PER_CLIENT (4): the extra ones are closed at once', async () => {
  const port = dnsOff.port;
  const held = await Promise.all(Array.from({ length: 4 }, () => tcpConnect(port, '127.0.0.2')));
  const extra = await Promise.all(
    Array.from({ length: 3 }, () => tcpConnect(port, '127.0.0.2').catch(() => undefined)),
  );
  // Each extra connection is reset by the server before it can ask anything.
  for (const s of extra) {
    if (!s) continue;
    await closed(s);
    assert.equal(s.destroyed, true);
  }
  // Another address still gets answers over TCP, and so do the four connections within the limit.
  const other = await tcpConnect(port, '127.0.0.3');
  assert.deepEqual(decode(await tcpAsk(other, buildQuery('www.example.org', A))).answer, [
    'www.example.org 300 A 192.0.2.10',
  ]);
  other.destroy();
  for (const s of held) assert.equal(decode(await tcpAsk(s, buildQuery('www.example.org', A))).rcode, 0);
  // Closing one frees its place for the same address.
  held[0].destroy();
  await closed(held[0]);
  await new Promise((res) => setTimeout(res, 100));
  const again = await tcpConnect(port, '127.0.0.2');
  assert.equal(decode(await tcpAsk(again, buildQuery('www.example.org', A))).rcode, 0);
  for (const s of [...held, again]) s.destroy();
});

test(`RRL: a burst of 300 identical queries from one /24 gets ${RATE} answers, every ${SLIP}rd of the rest truncated, the rest dropped; another /24 is answered; TCP still answers`, async () => {
  const q = buildQuery('big.example.org', TXT, { edns: { udpSize: 1232 } });
  const attacker = await udpSocket('127.0.0.2');
  const other = await udpSocket('127.0.1.1');
  try {
    const answers = await udpBurst(attacker, dns.port, q, 300);
    const full = answers.filter((a) => !decode(a).tc);
    const slipped = answers.filter((a) => decode(a).tc);
    // RATE at once, plus the tokens refilled while the burst was being sent (RATE per second).
    assert.ok(full.length >= RATE && full.length <= refilled(answers.spanMs), `full: ${full.length}`);
    const limitedCount = 300 - full.length;
    assert.ok(Math.abs(slipped.length - Math.floor(limitedCount / SLIP)) <= 1, `truncated: ${slipped.length}`);
    const dropped = 300 - answers.length;
    assert.ok(dropped >= limitedCount / 2, `dropped: ${dropped} of ${limitedCount} limited`);
    for (const a of full) assert.equal(decode(a).answer.length, 4);
    // A slipped answer is TC=1 with the question and nothing else: no bigger than the query.
    for (const a of slipped) {
      const d = decode(a);
      assert.deepEqual([d.tc, d.answer.length, d.qname], [true, 0, 'big.example.org']);
      assert.ok(a.length <= q.length, `${a.length} bytes for a ${q.length}-byte query`);
    }

    // Another network is answered normally, all of it, while the first is limited.
    const others = await udpBurst(other, dns.port, q, RATE);
    assert.equal(others.filter((a) => !decode(a).tc && decode(a).answer.length === 4).length, RATE);
    // The limited client retries over TCP, as a real resolver does on TC=1: answered whole.
    const s = await tcpConnect(dns.port, '127.0.0.2');
    assert.equal(decode(await tcpAsk(s, q)).answer.length, 4);
    s.destroy();

    // Random names (NXDOMAIN) share one bucket per zone, so they cannot spread the flood over fresh buckets.
    const random = await udpBurst(attacker, dns.port, (i) => buildQuery(`r${i}.example.org`, A), 100);
    const nx = random.filter((a) => !decode(a).tc && decode(a).rcode === 3).length;
    assert.ok(nx <= refilled(random.spanMs), `NXDOMAIN answered: ${nx}`);
    // And other names from the attacker's own network still get their own bucket.
    assert.deepEqual(decode((await udpAsk(attacker, dns.port, buildQuery('www.example.org', A)))!).answer, [
      'www.example.org 300 A 192.0.2.10',
    ]);
  } finally {
    attacker.close();
    other.close();
  }
});

test('RRL exemption (DNS_RRL_EXEMPT=127.0.2.0/24): the same burst from 127.0.2.1 is answered in full', async () => {
  const q = buildQuery('big.example.org', TXT, { edns: { udpSize: 1232 } });
  const sock = await udpSocket('127.0.2.1');
  try {
    const answers = await udpBurst(sock, dns.port, q, 300);
    assert.equal(answers.filter((a) => !decode(a).tc && decode(a).answer.length === 4).length, 300);
  } finally {
    sock.close();
  }
});

test('RRL off (DNS_RRL_RATE=0): the same burst is answered in full', async () => {
  const q = buildQuery('big.example.org', TXT, { edns: { udpSize: 1232 } });
  const sock = await udpSocket('127.0.0.2');
  try {
    const answers = await udpBurst(sock, dnsOff.port, q, 300);
    assert.equal(answers.length, 300);
    assert.equal(answers.filter((a) => decode(a).answer.length === 4).length, 300);
  } finally {
    sock.close();
  }
});

test('the counters show what was refused: timeouts and refusals over TCP, drops and slips over UDP', async () => {
  const read = async (port: number) => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
  };
  const [limited, open] = [await read(metricsPorts[0]), await read(metricsPorts[1])];
  assert.ok(limited('dns_tcp_timeouts_total') >= 1, 'the slowloris connection');
  assert.ok(limited('dns_rrl_dropped_total') > 150);
  assert.ok(limited('dns_rrl_slipped_total') > 50);
  assert.ok(open('dns_tcp_refused_total') >= 3, 'the connections over the per-client limit');
  assert.equal(open('dns_rrl_dropped_total'), 0);
  assert.equal(open('dns_rrl_slipped_total'), 0);
});

test('RRL over IPv6 (DNS_HOST=::1): the same burst from ::1 is limited by its /56', async () => {
  const node = await startDnsProcess({
    DATA_DIR: dataDir,
    SYNC_URL: 'off',
    DNS_HOST: '::1',
    DNS_RRL_RATE: String(RATE),
    DNS_RRL_SLIP: String(SLIP),
  });
  const sock = await udpSocket('::1');
  try {
    const q = buildQuery('big.example.org', TXT, { edns: { udpSize: 1232 } });
    const answers = await udpBurst(sock, node.port, q, 300, '::1');
    const full = answers.filter((a) => !decode(a).tc).length;
    assert.ok(full >= RATE && full <= refilled(answers.spanMs), `full: ${full}`);
    assert.ok(Math.abs(answers.length - full - Math.floor((300 - full) / SLIP)) <= 1, `answers: ${answers.length}`);
  } finally {
    sock.close();
    await node.stop();
  }
});
