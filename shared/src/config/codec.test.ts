// Round trips of the compiled-config codec, including the hub's splice of stored snapshot bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  SCHEMA_MAJOR,
  encodeDomainSnapshot,
  decodeDomainSnapshot,
  encodeConfigEntry,
  decodeConfigEntry,
  splitConfigEntry,
  type DomainSnapshot,
} from './index.js';

function sampleSnapshot(): DomainSnapshot {
  return {
    schemaMajor: SCHEMA_MAJOR,
    domainId: 7,
    name: 'example.org',
    state: 'active',
    dnsMode: 'managed',
    zone: {
      serial: 3,
      nameservers: ['ns1.platform.test', 'ns2.platform.test'],
      soaMname: 'ns1.platform.test',
      soaRname: 'hostmaster.example.org',
      soaRefresh: 10000,
      soaRetry: 2400,
      soaExpire: 604800,
      soaMinimum: 300,
      soaTtl: 3600,
      records: [
        {
          id: 1,
          name: 'www',
          type: 'A',
          destination: '192.0.2.1',
          ttl: 120,
          mxPriority: 0,
          proxied: true,
          captcha: false,
          scheme: 'Auto',
          port: 443,
          hostHeader: '',
          hostHeaderMode: 'own',
          timeout: 60,
          monitor: true,
        },
      ],
    },
    settings: {
      developerMode: true,
      developerModeExpiresAtMs: 1_800_000_000_000,
      cacheL2TtlDays: 3,
      cacheCapMb: 100,
      uptime: {
        minRequestsPerMinute: 20,
        monitors: [
          {
            id: 4,
            hostMatchType: '',
            hostIncludes: [],
            hostExcludes: [],
            pathMatchType: 'wildcard',
            pathIncludes: ['/api/*'],
            pathExcludes: [],
          },
        ],
      },
    },
    ruleSet: { version: 0, rules: [] },
    certificates: [],
  };
}

/** The fields of `actual` that `expected` names (fields added to the proto later decode to their defaults). */
function subset<T extends object>(actual: T, expected: T): Partial<T> {
  return Object.fromEntries(Object.keys(expected).map((k) => [k, actual[k as keyof T]])) as Partial<T>;
}

function assertSameSnapshot(actual: DomainSnapshot, expected: DomainSnapshot): void {
  assert.deepEqual({ ...subset(actual, expected), settings: subset(actual.settings, expected.settings) }, expected);
}

test('a snapshot survives encode and decode unchanged', () => {
  const s = sampleSnapshot();
  assertSameSnapshot(decodeDomainSnapshot(encodeDomainSnapshot(s)), s);
});

test('an entry built from stored snapshot bytes decodes like one built from the object', () => {
  const s = sampleSnapshot();
  const spliced = encodeConfigEntry({
    version: 42,
    domain: 'example.org',
    deleted: false,
    snapshotBytes: encodeDomainSnapshot(s),
  });
  const direct = encodeConfigEntry({ version: 42, domain: 'example.org', deleted: false, snapshot: s });
  const decoded = decodeConfigEntry(spliced);
  assert.deepEqual([decoded.version, decoded.domain, decoded.deleted], [42, 'example.org', false]);
  assertSameSnapshot(decoded.snapshot!, s);
  assert.deepEqual(decodeConfigEntry(direct), decoded);
  const split = splitConfigEntry(spliced);
  assert.equal(split.version, 42);
  assert.equal(split.domain, 'example.org');
  assertSameSnapshot(decodeDomainSnapshot(split.snapshotBytes), s);
});

test('a tombstone carries no snapshot', () => {
  const bytes = encodeConfigEntry({
    version: 9,
    domain: 'gone.example',
    deleted: true,
    snapshotBytes: new Uint8Array(0),
  });
  assert.deepEqual(decodeConfigEntry(bytes), { version: 9, domain: 'gone.example', deleted: true });
  assert.equal(splitConfigEntry(bytes).snapshotBytes.length, 0);
});

test('a delta keeps its flag and removed ids through both encodings and the split', () => {
  const s = sampleSnapshot();
  const header = {
    version: 7,
    domain: 'example.org',
    deleted: false,
    delta: true,
    removedRecordIds: [3, 2 ** 40],
    removedRuleIds: [9],
  };
  const spliced = encodeConfigEntry({ ...header, snapshotBytes: encodeDomainSnapshot(s) });
  const direct = encodeConfigEntry({ ...header, snapshot: s });
  for (const bytes of [spliced, direct]) {
    const decoded = decodeConfigEntry(bytes);
    assert.deepEqual([decoded.delta, decoded.removedRecordIds, decoded.removedRuleIds], [true, [3, 2 ** 40], [9]]);
    assertSameSnapshot(decoded.snapshot!, s);
    const { snapshotBytes, ...split } = splitConfigEntry(bytes);
    assert.deepEqual(split, header);
    assertSameSnapshot(decodeDomainSnapshot(snapshotBytes), s);
  }
  const whole = splitConfigEntry(encodeConfigEntry({ version: 8, domain: 'example.org', deleted: false, snapshot: s }));
  assert.deepEqual([whole.delta, whole.removedRecordIds, whole.removedRuleIds], [false, [], []]);
});

test('another schema major and garbage are rejected with codes', () => {
  const s = { ...sampleSnapshot(), schemaMajor: 2 };
  assert.throws(() => decodeDomainSnapshot(encodeDomainSnapshot(s)), { code: 'CFG_ERR_SCHEMA_MAJOR' });
  assert.throws(() => decodeConfigEntry(Uint8Array.from([0x12, 0x10, 0x61])), { code: 'CFG_ERR_DECODE' });
});
