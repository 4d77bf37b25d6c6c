// The batched UDP path (native recvmmsg/sendmmsg, DNS_UDP_IO=batch) next to node:dgram (DNS_UDP_IO=dgram): real
// sockets on 127.0.0.0/8, both servers in this process serving the same compiled zone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { startDnsServer, type DnsServer } from './server.js';
import { createCounters, type Counters } from './counters.js';
import { compileZone } from './zone/compile.js';
import { ZoneTable } from './zone/table.js';
import { buildQuery, sampleSnapshot } from './testing/fixtures.js';
import { TYPE } from './wire/constants.js';
import { bindBatchUdp } from './udp-batch.js';

const { A, MX, TXT, AAAA, ANY, AXFR, OPT } = TYPE;

let table: ZoneTable;
const servers: Record<'batch' | 'dgram', { server: DnsServer; counters: Counters }> = {} as never;

before(async () => {
  table = new ZoneTable();
  table.set(compileZone(sampleSnapshot(), { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] }).zone!);
  for (const udpIo of ['batch', 'dgram'] as const) {
    const counters = createCounters();
    const server = await startDnsServer({ host: '127.0.0.1', port: 0, tcpIdleMs: 2000, table, counters, udpIo });
    servers[udpIo] = { server, counters };
  }
});

after(async () => {
  await Promise.all(Object.values(servers).map((s) => s.server.close()));
});

function openClient(address: string): Promise<Socket> {
  const sock = createSocket({ type: 'udp4', recvBufferSize: 1 << 21 });
  return new Promise((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(0, address, () => resolve(sock));
  });
}

/** Sends every message from one socket at once and collects the answers until `expected` arrived or the time is up. */
function burst(sock: Socket, port: number, msgs: Buffer[], expected: number, timeoutMs = 10_000): Promise<Buffer[]> {
  const answers: Buffer[] = [];
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      sock.off('message', onMessage);
      resolve(answers);
    };
    const timer = setTimeout(done, timeoutMs);
    const onMessage = (m: Buffer) => {
      answers.push(m);
      if (answers.length === expected) setTimeout(done, 100); // a little longer: any extra answer is a failure too
    };
    sock.on('message', onMessage);
    for (const m of msgs) sock.send(m, port, '127.0.0.1');
  });
}

/** The question name of a query or answer, lower-cased, from offset 12. */
function qname(msg: Buffer): string {
  const labels: string[] = [];
  let p = 12;
  while (msg[p] !== 0) {
    labels.push(msg.toString('latin1', p + 1, p + 1 + msg[p]));
    p += 1 + msg[p];
  }
  return labels.join('.').toLowerCase();
}

test('a burst of 1,600 datagrams from 8 peers (4 addresses × 2 ports): each answered once, to its own peer and port', async () => {
  const { server, counters } = servers.batch;
  const before = counters.dns_queries_udp_total;
  const names = ['www.example.org', 'mail.example.org', 'nothere.example.org', 'a.dev.example.org', 'example.org'];
  const peers = await Promise.all(
    ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'].flatMap((a) => [openClient(a), openClient(a)]),
  );
  try {
    const PER_PEER = 200;
    const sent = peers.map((_, p) =>
      Array.from({ length: PER_PEER }, (_, i) =>
        // ID: peer in the high byte, sequence in the low; every third name says the peer again (p0.www…).
        buildQuery(`${i % 3 === 0 ? `p${p}.` : ''}${names[(i + p) % names.length]}`, i % 2 ? A : AAAA, {
          id: (p << 8) | (i & 0xff),
        }),
      ),
    );
    const got = await Promise.all(peers.map((sock, p) => burst(sock, server.port, sent[p]!, PER_PEER)));
    for (let p = 0; p < peers.length; p++) {
      const answers = got[p]!;
      assert.equal(answers.length, PER_PEER, `peer ${p}: ${answers.length} answers of ${PER_PEER}`);
      const asked = new Map(sent[p]!.map((q) => [`${q.readUInt16BE(0)} ${qname(q)}`, 0]));
      for (const a of answers) {
        assert.equal(a[2] & 0x80, 0x80, 'QR');
        const key = `${a.readUInt16BE(0)} ${qname(a)}`;
        assert.ok(asked.has(key), `peer ${p} got an answer it did not ask for: ${key}`);
        asked.set(key, asked.get(key)! + 1);
      }
      assert.ok(
        [...asked.values()].every((n) => n === 1),
        `peer ${p}: every query answered exactly once`,
      );
    }
    assert.equal(counters.dns_queries_udp_total - before, peers.length * PER_PEER);
  } finally {
    for (const s of peers) s.close();
  }
});

test('truncation, EDNS sizes, errors and malformed packets: byte for byte the answers node:dgram gives', async () => {
  const q = (name: string, type: number, o: Parameters<typeof buildQuery>[2] = {}) =>
    buildQuery(name, type, { id: 0x4242, ...o });
  const withJunk = Buffer.concat([q('www.example.org', A), Buffer.alloc(3000, 0xab)]);
  const qrSet = q('www.example.org', A);
  qrSet[2] |= 0x80;
  const badOpt = q('www.example.org', A, { edns: { udpSize: 4096 } });
  badOpt.writeUInt16BE(2, 10); // arcount 2, only one OPT present
  const cases: Array<[string, Buffer]> = [
    ['no EDNS, a 600-byte TXT answer: TC=1 at 512', q('example.org', TXT)],
    ['EDNS 512 (below the minimum): 512 bytes', q('example.org', TXT, { edns: { udpSize: 400 } })],
    ['EDNS 1232: the whole answer', q('example.org', TXT, { edns: { udpSize: 1232 } })],
    ['EDNS 4096: capped at 1232', q('example.org', TXT, { edns: { udpSize: 4096, do: true } })],
    ['three 200-byte TXT, no EDNS: TC=1', q('big.example.org', TXT)],
    ['three 200-byte TXT, EDNS 1232', q('big.example.org', TXT, { edns: { udpSize: 1232 } })],
    ['referral with glue, no EDNS', q('x.sub.example.org', A)],
    ['ANY', q('www.example.org', ANY)],
    ['MX with additional', q('example.org', MX, { edns: { udpSize: 1232 } })],
    ['NXDOMAIN with SOA', q('nothere.example.org', A, { edns: { udpSize: 1232 } })],
    ['NODATA', q('www.example.org', MX)],
    ['REFUSED outside our zones', q('www.example.com', A)],
    ['AXFR over UDP: REFUSED', q('example.org', AXFR)],
    ['EDNS version 1: BADVERS', q('www.example.org', A, { edns: { version: 1 } })],
    ['qtype OPT: FORMERR', q('www.example.org', OPT)],
    ['opcode 2 (STATUS): NOTIMP', q('www.example.org', A, { opcode: 2 })],
    ['two OPT promised, one sent: FORMERR', badOpt],
    ['3,000 bytes of junk after the question', withJunk],
    ['QR set: no answer', qrSet],
    ['11 bytes: no answer', Buffer.alloc(11, 1)],
    ['header only, qdcount 0', Buffer.from([0x42, 0x42, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])],
    ['a 60,000-byte datagram', Buffer.concat([q('mail.example.org', AAAA), Buffer.alloc(60_000)])],
  ];
  const answers: Record<string, Map<string, string>> = {};
  for (const io of ['batch', 'dgram'] as const) {
    const sock = await openClient('127.0.0.1');
    try {
      // One query at a time (answers carry the same ID), then the whole list again as one burst into one batch.
      const one = new Map<string, string>();
      for (const [label, msg] of cases) {
        const [a] = await burst(sock, servers[io].server.port, [msg], 1, msg[2] & 0x80 || msg.length < 12 ? 300 : 3000);
        one.set(label, a === undefined ? 'none' : a.toString('hex'));
      }
      answers[io] = one;
    } finally {
      sock.close();
    }
  }
  for (const [label] of cases) assert.equal(answers.batch!.get(label)!, answers.dgram!.get(label)!, label);
  assert.match(answers.batch!.get('no EDNS, a 600-byte TXT answer: TC=1 at 512')!, /^4242..../);
  assert.equal(Buffer.from(answers.batch!.get('no EDNS, a 600-byte TXT answer: TC=1 at 512')!, 'hex')[2]! & 0x02, 0x02);
  assert.equal(answers.batch!.get('QR set: no answer')!, 'none');
  assert.ok(Buffer.from(answers.batch!.get('EDNS 4096: capped at 1232')!, 'hex').length <= 1232);

  // The same list as one burst: answered as one batch, each answer the one its query gets alone.
  const sock = await openClient('127.0.0.1');
  try {
    const ids = cases.map(([, m], i) => {
      const c = Buffer.from(m);
      if (c.length >= 2) c.writeUInt16BE(0x1000 + i, 0);
      return c;
    });
    const expected = [...answers.batch!.values()].filter((a) => a !== 'none').length;
    const got = await burst(sock, servers.batch.server.port, ids, expected);
    assert.equal(got.length, expected);
    for (const a of got) {
      const i = a.readUInt16BE(0) - 0x1000;
      const alone = Buffer.from(answers.batch!.get(cases[i]![0])!, 'hex');
      alone.writeUInt16BE(0x1000 + i, 0);
      assert.equal(a.toString('hex'), alone.toString('hex'), cases[i]![0]);
    }
  } finally {
    sock.close();
  }
});

test('a socket that takes only half of every other batch (EAGAIN): the rest is sent when writable, each answer once', async () => {
  const counters = createCounters();
  const udp = await bindBatchUdp({
    host: '127.0.0.1',
    port: 0,
    reusePort: false,
    recvBufferSize: 1 << 22,
    table,
    counters,
    rrl: null,
    faultEveryNthSend: 2,
  });
  const peers = await Promise.all(['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'].map(openClient));
  try {
    const PER_PEER = 300;
    const sent = peers.map((_, p) =>
      Array.from({ length: PER_PEER }, (_, i) =>
        buildQuery(i % 2 ? 'www.example.org' : 'mail.example.org', A, { id: (p << 12) | i }),
      ),
    );
    const got = await Promise.all(peers.map((sock, p) => burst(sock, udp.port, sent[p]!, PER_PEER)));
    for (let p = 0; p < peers.length; p++) {
      const ids = got[p]!.map((a) => a.readUInt16BE(0)).sort((x, y) => x - y);
      assert.deepEqual(
        ids,
        sent[p]!.map((q) => q.readUInt16BE(0)),
        `peer ${p}: every query answered exactly once`,
      );
    }
    assert.equal(counters.dns_queries_udp_total, peers.length * PER_PEER);
  } finally {
    for (const s of peers) s.close();
    udp.close();
  }
});
