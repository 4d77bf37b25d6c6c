// Thousands of random and mutated packets over UDP and garbage streams over TCP, against the dns-server process;
// afterwards it is alive and still answers normal queries over both transports.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { freePort } from '../helpers/free-port.js';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode } from '../../dns-server/src/testing/decode.js';
import { fuzzPacket, prng } from '../../dns-server/src/testing/mutate.js';
import {
  dataDirWith,
  record as r,
  removeDir,
  snapshot,
  startDnsProcess,
  tcpQueries,
  udpQuery,
  type DnsProcess,
} from './dns-helpers.js';

let dns: DnsProcess | undefined;
let dataDir = '';
after(async () => {
  await dns?.stop();
  if (dataDir) removeDir(dataDir);
});

const UDP_PACKETS = 6000;
const TCP_CONNECTIONS = 150;

test('garbage never crashes or stalls the server', async () => {
  dataDir = await dataDirWith([
    snapshot('example.org', [
      r('www', 'A', '192.0.2.10'),
      r('*.dev', 'A', '192.0.2.50'),
      r('alias', 'CNAME', 'www.example.org'),
      r('sub', 'NS', 'ns1.sub.example.org'),
      r('ns1.sub', 'A', '192.0.2.53'),
      r('big', 'TXT', 'x'.repeat(900)),
    ]),
  ]);
  const metricsPort = await freePort();
  dns = await startDnsProcess({
    DATA_DIR: dataDir,
    SYNC_URL: 'off',
    DNS_TCP_IDLE_MS: '1000',
    // The TCP garbage below opens 150 connections at once from one address (the per-client limit is 32).
    DNS_TCP_MAX_PER_CLIENT: '1000',
    DNS_METRICS_PORT: String(metricsPort),
  });
  const rand = prng(7);

  // UDP: bursts of 100 packets; every answer must be a response (QR=1) with at least a header.
  const sock = createSocket({ type: 'udp4', recvBufferSize: 1 << 22 });
  let answers = 0;
  let malformed = 0;
  sock.on('message', (m) => {
    answers++;
    if (m.length < 12 || (m[2] & 0x80) === 0) malformed++;
  });
  await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', () => resolve()));
  for (let i = 0; i < UDP_PACKETS; i += 100) {
    await Promise.all(
      Array.from(
        { length: 100 },
        () =>
          new Promise<void>((resolve) => {
            sock.send(fuzzPacket(rand), dns!.port, '127.0.0.1', () => resolve());
          }),
      ),
    );
    await new Promise((res) => setTimeout(res, 5));
  }
  // Wait until the answers stop coming (bounded), so a slow machine is not mistaken for a stalled server.
  for (let last = -1, waited = 0; answers !== last && waited < 20_000; waited += 500) {
    last = answers;
    await new Promise((res) => setTimeout(res, 500));
  }
  sock.close();
  assert.equal(malformed, 0);
  assert.ok(answers > UDP_PACKETS / 10, `answered ${answers} of ${UDP_PACKETS}`);

  // TCP: connections that send random bytes, truncated frames, or frames of mutated queries, then close or stay.
  await Promise.all(
    Array.from(
      { length: TCP_CONNECTIONS },
      (_, i) =>
        new Promise<void>((resolve) => {
          const s = connect(dns!.port, '127.0.0.1');
          s.on('error', () => resolve());
          s.on('close', () => resolve());
          s.on('data', () => undefined);
          s.on('connect', () => {
            const frames: Buffer[] = [];
            for (let n = 0; n < 20; n++) {
              const p = fuzzPacket(rand);
              const len = i % 3 === 0 ? Math.floor(rand() * 65536) : p.length; // a third declare lengths that lie
              frames.push(Buffer.from([len >> 8, len & 0xff]), p);
            }
            s.write(Buffer.concat(frames));
            if (i % 2 === 0) s.end();
            else setTimeout(() => s.destroy(), 200);
          });
        }),
    ),
  );

  assert.equal(dns.proc.exitCode, null, 'the process is alive');
  const u = decode((await udpQuery(dns.port, buildQuery('www.example.org', 1)))!);
  assert.deepEqual(u.answer, ['www.example.org 300 A 192.0.2.10']);
  const [t] = await tcpQueries(dns.port, [buildQuery('x.dev.example.org', 1)]);
  assert.deepEqual(decode(t).answer, ['x.dev.example.org 300 A 192.0.2.50']);

  // The counters saw it all: queries on both transports, FORMERR answers, no handler exception.
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const counter = (series: string) =>
    Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics)?.[1]);
  assert.ok(counter('dns_queries_total{proto="udp"}') >= answers, metrics);
  assert.ok(counter('dns_queries_total{proto="tcp"}') > 0);
  assert.ok(counter('dns_responses_total{rcode="FORMERR"}') > 0);
  assert.equal(counter('dns_handler_errors_total'), 0);
});
