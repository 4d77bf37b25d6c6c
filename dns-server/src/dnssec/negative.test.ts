// Signed negative answers kept between queries (an NXDOMAIN's proof per closest encloser and next-closer NSEC3, a
// NODATA's on its node) hold the same records, in the same order, as the answer built afresh from the zone
// (ZoneSigner.augment + encodeAnswer, the path delv validates), for many names, for names sharing proofs, asked
// twice, in any case, and after the zone changed. The validator's own check is in dnssec.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCounters } from '../counters.js';
import { answerQuery } from '../handler.js';
import { buildQuery, rec, sampleSnapshot } from '../testing/fixtures.js';
import { ZoneBuilder } from '../zone/builder.js';
import { ZoneTable } from '../zone/table.js';
import { encodeAnswer } from '../zone/encode.js';
import { resolve } from '../zone/resolve.js';
import { TYPE } from '../wire/constants.js';
import { makeDnssec } from './testing.js';

const OPTS = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] };

/** A name at `p` (compression followed, lower-cased) and the offset after it. */
function readName(m: Buffer, p: number): [string, number] {
  const labels: string[] = [];
  let end = -1;
  for (let hops = 0; hops < 64; hops++) {
    const l = m[p];
    if (l === 0) return [labels.join('.'), end < 0 ? p + 1 : end];
    if ((l & 0xc0) === 0xc0) {
      if (end < 0) end = p + 2;
      p = ((l & 0x3f) << 8) | m[p + 1];
      continue;
    }
    labels.push(m.toString('latin1', p + 1, p + 1 + l).toLowerCase());
    p += l + 1;
  }
  throw new Error('name loop');
}

/** Header fields and every record as text (SOA RDATA names decompressed, other RDATA in hex), OPT left out. */
function records(m: Buffer): string[] {
  // RD is copied from the query, not in a template: left out.
  const out = [`flags ${m.readUInt16BE(2) & 0x86ff} qd ${m.readUInt16BE(4)}`];
  let [, p] = readName(m, 12);
  p += 4;
  const counts = [m.readUInt16BE(6), m.readUInt16BE(8), m.readUInt16BE(10)];
  for (const [section, n] of counts.entries()) {
    for (let i = 0; i < n; i++) {
      const [owner, q] = readName(m, p);
      const type = m.readUInt16BE(q);
      const ttl = m.readUInt32BE(q + 4);
      const len = m.readUInt16BE(q + 8);
      const rd = m.subarray(q + 10, q + 10 + len);
      p = q + 10 + len;
      if (type === TYPE.OPT) continue;
      let data = rd.toString('hex');
      if (type === TYPE.SOA) {
        const [mname, a] = readName(m, q + 10);
        const [rname, b] = readName(m, a);
        data = `${mname} ${rname} ${m.subarray(b, q + 10 + len).toString('hex')}`;
      }
      out.push(`${section} ${owner} ${type} ${ttl} ${data}`);
    }
  }
  return out;
}

function setup() {
  const snapshot = sampleSnapshot({ dnssec: makeDnssec() });
  const builder = new ZoneBuilder(snapshot, OPTS);
  const table = new ZoneTable();
  table.set(builder.zone!);
  return { snapshot, builder, table, counters: createCounters() };
}

/** The answer built afresh (nothing kept), as the records() of the message the handler would send. */
function fresh(builder: ZoneBuilder, name: string, qtype: number): string[] {
  const zone = builder.zone!;
  const key = name.toLowerCase();
  const { answer } = zone.signer!.augment(zone, key, qtype, resolve(zone, key, qtype));
  return records(encodeAnswer(key, qtype, answer).bytes);
}

function asked(s: ReturnType<typeof setup>, name: string, qtype: number): string[] {
  const msg = buildQuery(name, qtype, { edns: { do: true } });
  const a = answerQuery(msg, msg.length, false, s.table, s.counters);
  assert.ok(a, name);
  // The question goes back as asked.
  assert.deepEqual(a.subarray(12, 12 + msg.length - 23), msg.subarray(12, msg.length - 11), name);
  return records(a);
}

const NAMES = (n: number): string[] => {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    out.push(`nx${i}.example.org`); // closest encloser: the apex
    out.push(`A${i}.Deep.Example.ORG`); // an empty non-terminal, asked in mixed case
    out.push(`q${i}.x.y.deep.example.org`); // below a name with records
    out.push(`z.r${i}.www.example.org`); // two labels below an existing name
  }
  return out;
};

test('a kept NXDOMAIN proof holds what the answer built afresh holds, for every name sharing it', () => {
  const s = setup();
  const signer = s.builder.zone!.signer!;
  const tails = new Set<unknown>();
  for (const name of NAMES(150)) {
    for (const qtype of [TYPE.A, TYPE.DS, TYPE.TXT]) {
      const want = fresh(s.builder, name, qtype);
      assert.match(want[0], /flags 33795 /, `${name}: NXDOMAIN, AA`);
      assert.deepEqual(asked(s, name, qtype), want, `${name} ${qtype}, first`);
      assert.deepEqual(asked(s, name, qtype), want, `${name} ${qtype}, asked again`);
    }
    tails.add(signer.nxdomainTail(s.builder.zone!, name.toLowerCase()));
  }
  // Names share proofs: far fewer kept tails than names (the sample zone's chain has a few dozen NSEC3 records).
  assert.ok(!tails.has(null));
  assert.ok(tails.size < 150, `${tails.size} tails for 600 names`);
});

test('kept negative answers follow the zone: a patch and a new serial drop them', () => {
  const s = setup();
  const names = [...NAMES(40), 'www.example.org', 'deep.example.org', 'x.y.deep.example.org', 'alias.example.org'];
  const check = (label: string) => {
    for (const name of names)
      for (const qtype of [TYPE.A, TYPE.MX, TYPE.DS]) {
        const want = fresh(s.builder, name, qtype);
        assert.deepEqual(asked(s, name, qtype), want, `${label}: ${name} ${qtype}`);
        assert.deepEqual(asked(s, name, qtype), want, `${label}: ${name} ${qtype}, again`);
      }
  };
  check('before');
  // As ZoneSet.serve does after every patch: the table is set again, which empties its answer cache.
  const apply = (...args: Parameters<ZoneBuilder['apply']>) => {
    const result = s.builder.apply(...args);
    s.table.set(s.builder.zone!);
    return result;
  };
  const header = (serial: number) => ({ ...s.snapshot, zone: { ...s.snapshot.zone, serial, records: [] } });
  // Names that were NXDOMAIN appear (their neighbours' NSEC3 change), a wildcard appears under deep.
  const added = [rec('nx3', 'A', '192.0.2.3'), rec('nx17', 'TXT', 'here'), rec('*.deep', 'MX', 'mail.example.org')];
  assert.equal(apply(header(8), added, []).how, 'patched');
  check('after adding names');
  assert.equal(apply(header(9), [], [added[0].id, added[2].id]).how, 'patched');
  check('after removing them');
  assert.equal(apply(header(10), [], []).how, 'patched');
  check('after a new serial');
});
