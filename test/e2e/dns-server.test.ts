// The dns-server as a user starts it, answering real UDP and TCP queries from a node store filled through its API
// (SYNC_URL points at a closed port: the store is served before any hub answers). Answers are decoded by dns2 and,
// where installed, cross-checked with kdig.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { buildQuery, type QueryOptions } from '../../dns-server/src/testing/fixtures.js';
import { decode, type Decoded } from '../../dns-server/src/testing/decode.js';
import {
  dataDirWith,
  kdig,
  record as r,
  removeDir,
  snapshot,
  startDnsProcess,
  tcpQueries,
  udpQuery,
  type DnsProcess,
} from './dns-helpers.js';

const A = 1,
  NS = 2,
  CNAME = 5,
  SOA = 6,
  PTR = 12,
  MX = 15,
  TXT = 16,
  AAAA = 28,
  SRV = 33,
  CAA = 257,
  ANY = 255;
const LONG = 'v=DKIM1; p=' + 'k'.repeat(600);

let dns: DnsProcess;
let dataDir: string;

before(async () => {
  dataDir = await dataDirWith([
    snapshot(
      'example.org',
      [
        r('@', 'A', '192.0.2.1'),
        r('@', 'MX', 'mail.example.org'),
        r('@', 'TXT', LONG),
        r('@', 'CAA', '0 issue "letsencrypt.org"'),
        r('www', 'A', '192.0.2.10'),
        r('www', 'AAAA', '2001:db8::10'),
        r('mail', 'A', '192.0.2.25'),
        r('shop', 'A', '198.51.100.7', { proxied: true }),
        r('cdn', 'CNAME', 'origin.example.net', { proxied: true }),
        r('alias', 'CNAME', 'hop.example.org'),
        r('hop', 'CNAME', 'www.example.org'),
        r('loop1', 'CNAME', 'loop2.example.org'),
        r('loop2', 'CNAME', 'loop1.example.org'),
        r('*.dev', 'A', '192.0.2.50'),
        r('a.b.ent', 'A', '192.0.2.60'),
        r('_sip._tcp', 'SRV', '5 5060 mail.example.org', { mxPriority: 10 }),
        r('1.2', 'PTR', 'www.example.org'),
        r('sub', 'NS', 'ns1.sub.example.org'),
        r('ns1.sub', 'A', '192.0.2.53'),
        r('big', 'TXT', 'a'.repeat(250)),
        r('big', 'TXT', 'b'.repeat(250)),
        r('big', 'TXT', 'c'.repeat(250)),
      ],
      { serial: 2026112201 },
    ),
    snapshot('pending.example', [r('www', 'A', '192.0.2.80')], { state: 'pending' }),
    snapshot('disabled.example', [r('www', 'A', '192.0.2.81')], { state: 'disabled' }),
    snapshot('banned.example', [r('www', 'A', '192.0.2.82')], { state: 'banned' }),
  ]);
  dns = await startDnsProcess({
    DATA_DIR: dataDir,
    SYNC_URL: 'ws://127.0.0.1:9',
    NODE_TOKEN: 'unused',
    EDGE_IPV4: '203.0.113.1,203.0.113.2',
    EDGE_IPV6: '2001:db8:ffff::1',
    DNS_TCP_IDLE_MS: '400',
  });
});

after(async () => {
  await dns?.stop();
  removeDir(dataDir);
});

async function udp(name: string, qtype: number, o: QueryOptions = {}): Promise<Decoded> {
  const answer = await udpQuery(dns.port, buildQuery(name, qtype, o));
  assert.ok(answer, `an answer to ${name}/${qtype}`);
  return decode(answer);
}

async function tcp(name: string, qtype: number, o: QueryOptions = {}): Promise<Decoded> {
  const [answer] = await tcpQueries(dns.port, [buildQuery(name, qtype, o)]);
  return decode(answer);
}

const NEG_SOA = 'example.org 300 SOA ns1.platform.test hostmaster.example.org 2026112201';

test('A over UDP and over TCP, authoritative', async () => {
  for (const d of [await udp('www.example.org', A), await tcp('www.example.org', A)]) {
    assert.equal(d.rcode, 0);
    assert.equal(d.aa, true);
    assert.deepEqual(d.answer, ['www.example.org 300 A 192.0.2.10']);
  }
});

test('AAAA', async () =>
  assert.deepEqual((await udp('www.example.org', AAAA)).answer, ['www.example.org 300 AAAA 2001:db8::10']));

test('apex SOA carries the snapshot serial; apex NS is the nameserver set', async () => {
  assert.deepEqual((await udp('example.org', SOA)).answer, [
    'example.org 3600 SOA ns1.platform.test hostmaster.example.org 2026112201',
  ]);
  assert.deepEqual((await udp('example.org', NS)).answer, [
    'example.org 3600 NS ns1.platform.test',
    'example.org 3600 NS ns2.platform.test',
  ]);
});

test('MX with the exchange address in additional', async () => {
  const d = await udp('example.org', MX);
  assert.deepEqual(d.answer, ['example.org 300 MX 10 mail.example.org']);
  assert.deepEqual(d.additional, ['mail.example.org 300 A 192.0.2.25']);
});

test('TXT longer than 255 bytes is split into 255-byte strings', async () => {
  const d = await udp('example.org', TXT, { edns: {} });
  assert.deepEqual(d.answer, [`example.org 300 TXT ${LONG}`]);
  const text = kdig(dns.port, 'example.org', 'TXT', '+tcp');
  if (text !== null) {
    const strings = /IN\s+TXT\s+(".*)/
      .exec(text)![1]
      .match(/"[^"]*"/g)!
      .map((s) => s.length - 2);
    assert.deepEqual(strings, [255, 255, LONG.length - 510]);
  }
});

test('SRV, CAA and PTR', async () => {
  assert.deepEqual((await udp('_sip._tcp.example.org', SRV)).answer, [
    '_sip._tcp.example.org 300 SRV 10 5 5060 mail.example.org',
  ]);
  assert.deepEqual((await udp('example.org', CAA)).answer, ['example.org 300 CAA 0 issue letsencrypt.org']);
  assert.deepEqual((await udp('1.2.example.org', PTR)).answer, ['1.2.example.org 300 PTR www.example.org']);
});

test('proxied A and CNAME answer with the edge addresses, TTL 120', async () => {
  assert.deepEqual((await udp('shop.example.org', A)).answer, [
    'shop.example.org 120 A 203.0.113.1',
    'shop.example.org 120 A 203.0.113.2',
  ]);
  assert.deepEqual((await udp('shop.example.org', AAAA)).answer, ['shop.example.org 120 AAAA 2001:db8:ffff::1']);
  assert.deepEqual((await udp('cdn.example.org', A)).answer, [
    'cdn.example.org 120 A 203.0.113.1',
    'cdn.example.org 120 A 203.0.113.2',
  ]);
  assert.deepEqual((await udp('cdn.example.org', CNAME)).answer, []);
});

test('NXDOMAIN with the SOA in authority, TTL = min(SOA TTL, minimum)', async () => {
  const d = await udp('nothere.example.org', A);
  assert.equal(d.rcode, 3);
  assert.equal(d.aa, true);
  assert.deepEqual(d.authority, [NEG_SOA]);
});

test('NODATA with the SOA in authority', async () => {
  const d = await udp('www.example.org', MX);
  assert.equal(d.rcode, 0);
  assert.deepEqual(d.answer, []);
  assert.deepEqual(d.authority, [NEG_SOA]);
});

test('wildcard answers below it; an empty non-terminal is NODATA', async () => {
  assert.deepEqual((await udp('anything.dev.example.org', A)).answer, ['anything.dev.example.org 300 A 192.0.2.50']);
  const ent = await udp('b.ent.example.org', A);
  assert.equal(ent.rcode, 0);
  assert.deepEqual(ent.answer, []);
  assert.equal((await udp('c.ent.example.org', A)).rcode, 3);
});

test('a CNAME chain is followed inside the zone; a loop ends', async () => {
  assert.deepEqual((await udp('alias.example.org', A)).answer, [
    'alias.example.org 300 CNAME hop.example.org',
    'hop.example.org 300 CNAME www.example.org',
    'www.example.org 300 A 192.0.2.10',
  ]);
  const loop = await udp('loop1.example.org', A);
  assert.equal(loop.rcode, 0);
  assert.equal(loop.answer.length, 2);
});

test('a delegation below the apex answers a referral with glue, AA off', async () => {
  const d = await udp('host.sub.example.org', A);
  assert.equal(d.aa, false);
  assert.deepEqual(d.answer, []);
  assert.deepEqual(d.authority, ['sub.example.org 300 NS ns1.sub.example.org']);
  assert.deepEqual(d.additional, ['ns1.sub.example.org 300 A 192.0.2.53']);
  const text = kdig(dns.port, 'host.sub.example.org', 'A');
  if (text !== null)
    assert.match(text, /AUTHORITY SECTION:\nsub\.example\.org\.\s+300\s+IN\s+NS\s+ns1\.sub\.example\.org\./);
});

test('ANY gets one RRset (RFC 8482)', async () => {
  assert.deepEqual((await udp('example.org', ANY)).answer, ['example.org 300 A 192.0.2.1']);
});

test('EDNS: OPT echoed with 1232, BADVERS for version 1', async () => {
  assert.deepEqual((await udp('www.example.org', A, { edns: { udpSize: 4096 } })).opt, {
    udpSize: 1232,
    extRcode: 0,
    version: 0,
    do: false,
  });
  const bad = await udp('www.example.org', A, { edns: { version: 1 } });
  assert.equal(bad.opt?.extRcode, 1);
  assert.deepEqual(bad.answer, []);
});

test('answers over 512 bytes (no EDNS) or over the EDNS buffer are truncated with TC; TCP carries them whole', async () => {
  const plain = await udp('big.example.org', TXT);
  assert.equal(plain.tc, true);
  assert.deepEqual(plain.answer, []);
  assert.equal((await udp('big.example.org', TXT, { edns: { udpSize: 700 } })).tc, true);
  const full = await udp('big.example.org', TXT, { edns: { udpSize: 1232 } });
  assert.equal(full.tc, false);
  assert.equal(full.answer.length, 3);
  const overTcp = await tcp('big.example.org', TXT);
  assert.equal(overTcp.tc, false);
  assert.equal(overTcp.answer.length, 3);
});

test('TCP: several queries on one connection, answered in order', async () => {
  const names = ['www.example.org', 'mail.example.org', 'nothere.example.org', 'example.org'];
  const answers = await tcpQueries(
    dns.port,
    names.map((n, i) => buildQuery(n, A, { id: 100 + i })),
  );
  assert.deepEqual(
    answers.map((a) => decode(a).id),
    [100, 101, 102, 103],
  );
  assert.deepEqual(
    answers.map((a) => decode(a).rcode),
    [0, 0, 3, 0],
  );
});

test('TCP: an idle connection is closed by the server', async () => {
  const { connect } = await import('node:net');
  const sock = connect(dns.port, '127.0.0.1');
  const closed = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      sock.destroy();
      resolve(false);
    }, 10_000);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
    sock.on('error', () => undefined);
  });
  assert.equal(closed, true);
});

test('REFUSED outside the zones served, and for disabled and banned domains; pending domains are answered', async () => {
  assert.equal((await udp('example.com', A)).rcode, 5);
  assert.equal((await udp('www.disabled.example', A)).rcode, 5);
  assert.equal((await udp('www.banned.example', A)).rcode, 5);
  assert.deepEqual((await udp('www.pending.example', A)).answer, ['www.pending.example 300 A 192.0.2.80']);
});

test('NOTIMP for opcode STATUS, FORMERR for a malformed question, nothing for a response', async () => {
  assert.equal((await udp('example.org', A, { opcode: 2 })).rcode, 4);
  const two = buildQuery('example.org', A);
  two.writeUInt16BE(2, 4);
  assert.equal(decode((await udpQuery(dns.port, two))!).rcode, 1);
  const cut = buildQuery('example.org', A).subarray(0, 19);
  assert.equal((await udpQuery(dns.port, cut))![3] & 0xf, 1);
  const response = buildQuery('www.example.org', A);
  response[2] |= 0x80;
  assert.equal(await udpQuery(dns.port, response, 500), null);
});

test('the question keeps its case', async () => {
  const d = await udp('WwW.ExAmPlE.OrG', A);
  assert.equal(d.qname, 'WwW.ExAmPlE.OrG');
  assert.deepEqual(d.answer, ['WwW.ExAmPlE.OrG 300 A 192.0.2.10']);
  assert.equal((await udp('NoThErE.example.ORG', A)).qname, 'NoThErE.example.ORG');
});

test('TCP: a query split across several segments is reassembled', async () => {
  const { connect } = await import('node:net');
  const q = buildQuery('www.example.org', A, { id: 777 });
  const framed = Buffer.concat([Buffer.from([q.length >> 8, q.length & 0xff]), q]);
  const sock = connect(dns.port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  const answer = new Promise<Buffer>((resolve, reject) => {
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) resolve(buf.subarray(2));
    });
    sock.on('error', reject);
  });
  for (const part of [framed.subarray(0, 1), framed.subarray(1, 7), framed.subarray(7)]) {
    sock.write(part);
    await new Promise((r) => setTimeout(r, 30));
  }
  const d = decode(await answer);
  sock.destroy();
  assert.equal(d.id, 777);
  assert.deepEqual(d.answer, ['www.example.org 300 A 192.0.2.10']);
});
