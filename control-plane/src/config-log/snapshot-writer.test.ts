// The config log's payload encoder (shared/src/config/snapshot-writer.ts) writes exactly the bytes of protobufjs'
// encodeDomainSnapshot. It lives here for the control plane's buildZone and buildSettings, which make real snapshots.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  encodeDomainSnapshot,
  encodeDomainSnapshotFast,
  SCHEMA_MAJOR,
  type DomainSnapshot,
  type ZoneRecord,
} from '@platform/shared/config';
import { zoneRecord } from '@platform/shared/testing/config-entries';
import { buildSettings, buildZone } from './snapshot.js';

function snapshot(records: ZoneRecord[]): DomainSnapshot {
  return {
    schemaMajor: SCHEMA_MAJOR,
    domainId: 7,
    name: 'example.org',
    state: 'active',
    dnsMode: 'managed',
    zone: buildZone({ name: 'example.org', nsSetIndex: 0, zoneSerial: 12 }, records, [['ns1.test', 'ns2.test']]),
    settings: {
      ...buildSettings(
        {
          developerModeUntil: null,
          cacheL2TtlDays: 3,
          cacheCapMb: 100,
          originProtocol: 'https',
          underAttack: false,
        },
        0,
      ),
      cachePurgeGeneration: 4,
      cachePurges: [{ id: 3, prefixes: ['/a/'], refresh: true }],
    },
    ruleSet: {
      version: 12,
      rules: [{ id: 5, type: 'cache', enabled: true, priority: 1, body: new Uint8Array([1, 2]) }],
    },
    certificates: [],
    acmeHttpChallenges: [{ hostname: 'www.example.org', token: 't', keyAuthorization: 'k' }],
  } as DomainSnapshot;
}

const record = (id: number, fields: Partial<ZoneRecord> = {}): ZoneRecord => ({
  ...zoneRecord(id, `r${id}`, `10.0.${(id >> 8) & 255}.${id & 255}`),
  monitor: false,
  ...fields,
});

test('encodeDomainSnapshotFast: the same bytes as encodeDomainSnapshot, whatever the records hold', () => {
  const cases: ZoneRecord[][] = [
    [],
    [record(1)],
    [
      record(1, { proxied: true, captcha: true, monitor: true, scheme: 'Https', port: 8443, ttl: 120 }),
      record(2 ** 31 + 5, { type: 'MX', destination: 'mx.example.net', mxPriority: 65535 }),
      record(3, { type: 'TXT', destination: 'é ünïcode ✓ 𝄞 text' }),
      // A record body past 127 bytes, and a string past 127 and 16383 bytes: lengths of two and three bytes.
      record(4, { type: 'TXT', destination: 'x'.repeat(200) }),
      record(5, { type: 'TXT', destination: 'y'.repeat(20_000) }),
      record(6, { type: 'TXT', destination: `${'z'.repeat(150)}ß` }),
      record(7, { hostHeader: 'origin.example.org', hostHeaderMode: 'target' }),
      record(0, { name: '@', ttl: 0, port: 0, timeout: 0 }),
    ],
    Array.from({ length: 2000 }, (_, i) => record(i + 1)),
  ];
  for (const records of cases) {
    const s = snapshot(records);
    assert.deepEqual(
      Buffer.from(encodeDomainSnapshotFast(s)),
      Buffer.from(encodeDomainSnapshot(s)),
      `${records.length} records`,
    );
  }
});

test('encodeDomainSnapshotFast with records given apart (ids apart, null priority and host header): the same bytes', () => {
  const given = [record(1), record(2, { type: 'MX', destination: 'mx.example.net', mxPriority: 5 }), record(3)];
  // As a stored record holds them (records/types.ts RecordFields): null for no priority and no host header, and a
  // comment and line the encoder does not send.
  const stored = given.map(({ id: _id, ...r }) => ({
    ...r,
    mxPriority: r.type === 'MX' ? r.mxPriority : null,
    hostHeader: null,
    comment: 'not sent',
    line: 9,
  }));
  const ids = [101, 102, 2 ** 31 + 7];
  const inSnapshot = [record(100, { hostHeader: 'origin.example.org' })];
  const whole = [...inSnapshot, ...given.map((r, i) => ({ ...r, id: ids[i]! }))];
  assert.deepEqual(
    Buffer.from(encodeDomainSnapshotFast(snapshot(inSnapshot), { ids, records: stored })),
    Buffer.from(encodeDomainSnapshot(snapshot(whole))),
  );
  // Only records given apart, none in the snapshot.
  assert.deepEqual(
    Buffer.from(encodeDomainSnapshotFast(snapshot([]), { ids, records: stored })),
    Buffer.from(encodeDomainSnapshot(snapshot(whole.slice(1)))),
  );
  assert.throws(() => encodeDomainSnapshotFast(snapshot([]), { ids: [1], records: stored }), /1 ids for 3 records/);
});
