// The node store's hand-written reads of encoded records and snapshots give exactly what protobufjs gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { prng } from '../testing/prng.js';
import { domainHeader } from '../testing/config-entries.js';
import {
  PROTO_PATH,
  decodeDomainSnapshot,
  decodeDomainSnapshotFast,
  decodeZoneRecord,
  decodeZoneRecordCore,
  zoneRecordCore,
  encodeDomainSnapshot,
  encodeZoneRecord,
  outlineSnapshot,
  sliceSnapshotParts,
  splitSnapshot,
  toObject,
  zoneRecordId,
  type ZoneRecord,
  type ZoneRecordCore,
} from './index.js';

const ZoneRecordType = protobuf.loadSync(PROTO_PATH).lookupType('platform.config.v1.ZoneRecord');
const generic = (bytes: Uint8Array) => toObject(ZoneRecordType, bytes);

function randomRecord(random: () => number): ZoneRecord {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const big = () => pick([0, 1, 127, 128, 300, 16383, 16384, 2 ** 21, 2 ** 28 + 5, 2 ** 31, 2 ** 32 - 1]);
  return {
    id: pick([1, 127, 128, 2 ** 35 + 3, 2 ** 52 + 1, Math.floor(random() * 1e9)]),
    name: pick(['@', 'www', '*.dev', 'ünï.cödé', 'a'.repeat(200), '']),
    type: pick(['A', 'AAAA', 'TXT', '']),
    destination: pick(['192.0.2.1', 'v=spf1 ' + 'x'.repeat(300), '€ text', '']),
    ttl: big(),
    mxPriority: big(),
    proxied: random() < 0.5,
    captcha: random() < 0.5,
    scheme: pick(['Auto', 'Https', '']),
    port: big(),
    hostHeader: pick(['', 'origin.example.net']),
    hostHeaderMode: pick(['own', 'target', '']),
    timeout: big(),
    monitor: random() < 0.5,
  };
}

test('decodeZoneRecord and zoneRecordId read random records exactly as protobufjs does', () => {
  const random = prng(17);
  for (let i = 0; i < 2000; i++) {
    const r = randomRecord(random);
    const bytes = encodeZoneRecord(r);
    const want = generic(bytes);
    const got = decodeZoneRecord(bytes);
    assert.deepStrictEqual(got, want);
    assert.deepStrictEqual(Object.keys(got), Object.keys(want), 'same fields in the same order');
    assert.equal(zoneRecordId(bytes), want.id);
    // A plain Uint8Array (not a Buffer) reads the same.
    assert.deepStrictEqual(decodeZoneRecord(Uint8Array.from(bytes)), want);
  }
});

test('decodeZoneRecordCore writes exactly the core fields of decodeZoneRecord into the object it is given, every time', () => {
  const random = prng(23);
  const into: ZoneRecordCore = { id: 9, name: 'x', type: 'x', destination: 'x', ttl: 9, mxPriority: 9, proxied: true };
  const core = (r: ZoneRecord): ZoneRecordCore => zoneRecordCore(r);
  // Fields unknown to the reader (field 20, and 5 as fixed32 on the generic path) on some of them.
  const tails = [Buffer.alloc(0), Buffer.from([20 << 3, 0x96, 0x01]), Buffer.from([(5 << 3) | 5, 1, 0, 0, 0])];
  for (let i = 0; i < 2000; i++) {
    const bytes = Buffer.concat([encodeZoneRecord(randomRecord(random)), tails[i % 3]!]);
    let want: ZoneRecord;
    try {
      want = decodeZoneRecord(bytes);
    } catch {
      assert.throws(() => decodeZoneRecordCore(bytes, into), { code: 'CFG_ERR_DECODE' });
      continue;
    }
    assert.equal(decodeZoneRecordCore(bytes, into), into);
    assert.deepStrictEqual(into, core(want));
  }
  // A message without fields: the defaults, whatever the object held before.
  assert.deepStrictEqual(decodeZoneRecordCore(new Uint8Array(0), into), core(decodeZoneRecord(new Uint8Array(0))));
});

test('unknown fields are skipped, odd wire types take the generic path, truncated input throws CFG_ERR_DECODE', () => {
  const bytes = Buffer.from(encodeZoneRecord(randomRecord(prng(3))));
  // Unknown fields 20 (varint), 21 (bytes), 22 (fixed64), 23 (fixed32) appended.
  const extra = Buffer.from([20 << 3, 0x96, 0x01, (21 << 3) | 2, 2, 0x61, 0x62, (22 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8]);
  const withUnknown = Buffer.concat([bytes, extra, Buffer.from([(23 << 3) | 5, 1, 2, 3, 4])]);
  assert.deepStrictEqual(decodeZoneRecord(withUnknown), generic(withUnknown));
  // Field 5 (ttl) sent as fixed32: protobufjs's own reading decides.
  const odd = Buffer.concat([bytes, Buffer.from([(5 << 3) | 5, 1, 0, 0, 0])]);
  let want: unknown;
  try {
    want = generic(odd);
  } catch (err) {
    want = err;
  }
  if (want instanceof Error) assert.throws(() => decodeZoneRecord(odd), { code: 'CFG_ERR_DECODE' });
  else assert.deepStrictEqual(decodeZoneRecord(odd), want);
  // Truncated: CFG_ERR_DECODE wherever protobufjs fails; where it reads on (it takes some truncated varints and
  // strings as whole) this reader may fail too, and when it does not, it gives the same record.
  for (let cut = 1; cut < bytes.length; cut++) {
    const part = bytes.subarray(0, cut);
    let want: unknown;
    try {
      want = generic(part);
    } catch {
      want = undefined;
    }
    let got: unknown;
    try {
      got = decodeZoneRecord(part);
    } catch (err) {
      assert.equal((err as { code?: string }).code, 'CFG_ERR_DECODE');
      assert.throws(() => zoneRecordId(part), { code: 'CFG_ERR_DECODE' });
      continue;
    }
    assert.deepStrictEqual(got, want, `cut at ${cut}`);
  }
});

test('splitSnapshot gives the header without records and rules, and every part as sliceSnapshotParts does', () => {
  const random = prng(5);
  const s = domainHeader('example.org', 9);
  s.zone.records = Array.from({ length: 50 }, () => randomRecord(random));
  s.ruleSet.rules = [];
  s.dnssec = undefined;
  const bytes = encodeDomainSnapshot(s);
  const split = splitSnapshot(bytes);
  const whole = decodeDomainSnapshot(bytes);
  const header = decodeDomainSnapshot(split.header);
  assert.deepStrictEqual(header, { ...whole, zone: { ...whole.zone, records: [] } });
  const sliced = sliceSnapshotParts(bytes);
  assert.deepStrictEqual(split.records.map(Buffer.from), sliced.records.map(Buffer.from));
  assert.deepStrictEqual(split.records.map(decodeZoneRecord), whole.zone.records);
  assert.deepStrictEqual(decodeDomainSnapshotFast(bytes), whole);
  assert.throws(() => splitSnapshot(bytes.subarray(0, bytes.length - 3)), { code: 'CFG_ERR_DECODE' });
});

test("outlineSnapshot gives splitSnapshot's header and counts the records and rules without slicing them", () => {
  const random = prng(6);
  const s = domainHeader('example.org', 9);
  s.zone.records = Array.from({ length: 40 }, () => randomRecord(random));
  s.dnssec = undefined;
  const bytes = encodeDomainSnapshot(s);
  const split = splitSnapshot(bytes);
  const outline = outlineSnapshot(bytes);
  assert.equal(outline.records, 40);
  assert.equal(outline.rules, split.rules.length);
  assert.deepStrictEqual(Buffer.from(outline.header), Buffer.from(split.header));
  const empty = encodeDomainSnapshot(domainHeader('example.org', 2));
  assert.equal(outlineSnapshot(empty).records, 0);
  assert.throws(() => outlineSnapshot(bytes.subarray(0, bytes.length - 3)), { code: 'CFG_ERR_DECODE' });
});
