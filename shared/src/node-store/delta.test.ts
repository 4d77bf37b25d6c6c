// Delta entries in the node store on a real LMDB directory: one transaction per entry or frame, random sequences
// converging to the reference model (and to what the latest snapshots alone give), and the move from layout 1.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import {
  SCHEMA_MAJOR,
  decodeDomainSnapshot,
  encodeConfigEntry,
  encodeDomainSnapshot,
  type ConfigEntry,
  type DomainSnapshot,
  type Rule,
} from '../config/index.js';
import { prng } from '../testing/prng.js';
import {
  applyToModel,
  deltaEntry,
  domainHeader,
  snapshotEntry,
  tombstoneEntry,
  zoneRecord as record,
} from '../testing/config-entries.js';
import { openNodeStore, STORE_LAYOUT, type AppliedEvent, type NodeStore } from './index.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'node-store-delta-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function rule(id: number, priority: number, tag: string): Rule {
  return { id, type: 'header', enabled: true, priority, body: new Uint8Array(Buffer.from(tag)) };
}

/** A domain header whose settings change with the serial, so a header replaced by a delta shows. */
function header(name: string, serial: number, state = 'active'): DomainSnapshot {
  const h = domainHeader(name, serial, state);
  h.settings.cacheCapMb = serial;
  return h;
}

/** A snapshot as a store returns it: through the codec (defaults filled), records and rules in id order. */
function normalised(s: DomainSnapshot): DomainSnapshot {
  const d = decodeDomainSnapshot(encodeDomainSnapshot(s));
  d.zone.records.sort((a, b) => a.id - b.id);
  d.ruleSet.rules.sort((a, b) => a.id - b.id);
  return d;
}

function assertStoreEquals(store: NodeStore, model: Map<string, DomainSnapshot>, what: string): void {
  assert.deepEqual(store.domains().sort(), [...model.keys()].sort(), `${what}: domains`);
  for (const [domain, want] of model)
    assert.deepEqual(store.getSnapshot(domain), normalised(want), `${what}: ${domain}`);
}

test('a delta writes its records and rules, removes the listed ids and replaces the header, with its version', async (t) => {
  const store = openNodeStore(join(tempDir(t), 'lmdb'));
  t.after(() => store.close());
  const events: AppliedEvent[] = [];
  store.onApplied((e) => events.push(e));
  const first = header('a.example', 1);
  first.zone.records = [record(1, 'www', '192.0.2.1'), record(2, 'mail', '192.0.2.2'), record(3, 'ftp', '192.0.2.3')];
  first.ruleSet.rules = [rule(10, 1, 'x'), rule(11, 2, 'y')];
  store.apply(snapshotEntry(1, first));
  store.apply(
    deltaEntry(2, header('a.example', 2, 'moved'), {
      records: [record(2, 'mail', '198.51.100.2'), record(4, 'new', '192.0.2.4')],
      removedRecordIds: [1, 99],
      rules: [rule(12, 0, 'z')],
      removedRuleIds: [11],
    }),
  );
  assert.equal(store.version, 2);
  const s = store.getSnapshot('a.example')!;
  assert.equal(s.state, 'moved');
  assert.equal(s.zone.serial, 2);
  assert.equal(s.settings.cacheCapMb, 2);
  assert.deepEqual(
    s.zone.records.map((r) => [r.id, r.name, r.destination]),
    [
      [2, 'mail', '198.51.100.2'],
      [3, 'ftp', '192.0.2.3'],
      [4, 'new', '192.0.2.4'],
    ],
  );
  assert.deepEqual(
    s.ruleSet.rules.map((r) => r.id),
    [10, 12],
  );
  assert.equal(store.getRecord('a.example', 1), undefined);
  assert.equal(store.getRecord('a.example', 4)!.destination, '192.0.2.4');
  assert.equal(store.getHeader('a.example')!.zone.records.length, 0);
  assert.deepEqual(
    events.map((e) => [e.version, e.kind, [...e.recordIds].sort(), [...e.ruleIds].sort()]),
    [
      [1, 'snapshot', [], []],
      [2, 'delta', [1, 2, 4, 99], [11, 12]],
    ],
  );
  // A snapshot replaces the domain whole: records and rules it does not name are gone.
  const replaced = header('a.example', 3);
  replaced.zone.records = [record(3, 'ftp', '192.0.2.33')];
  store.apply(snapshotEntry(3, replaced));
  assert.deepEqual(
    store.getRecords('a.example').map((r) => [r.id, r.destination]),
    [[3, '192.0.2.33']],
  );
  assert.deepEqual(store.getRules('a.example'), []);
  // A tombstone removes the header, records and rules; another domain sharing the name's prefix is untouched.
  const other = header('a.example.org', 1);
  other.zone.records = [record(1, 'www', '192.0.2.9')];
  store.apply(snapshotEntry(4, other));
  store.apply(tombstoneEntry(5, 'a.example'));
  assert.deepEqual(store.domains(), ['a.example.org']);
  assert.deepEqual(store.getRecords('a.example'), []);
  assert.equal(store.getRecords('a.example.org').length, 1);
});

test('a delta carrying no snapshot keeps the stored header and applies its removals', async (t) => {
  const store = openNodeStore(join(tempDir(t), 'lmdb'));
  t.after(() => store.close());
  const first = header('a.example', 1);
  first.zone.records = [record(1, 'www', '192.0.2.1'), record(2, 'mail', '192.0.2.2')];
  store.apply(snapshotEntry(1, first));
  store.applyEncoded([
    encodeConfigEntry({
      version: 2,
      domain: 'a.example',
      deleted: false,
      delta: true,
      removedRecordIds: [2],
      removedRuleIds: [],
      snapshotBytes: new Uint8Array(0),
    }),
  ]);
  assert.equal(store.version, 2);
  assert.equal(store.getSnapshot('a.example')!.zone.serial, 1);
  assert.deepEqual(
    store.getRecords('a.example').map((r) => r.id),
    [1],
  );
});

test('an unreadable delta changes nothing of the domain but the version moves on', async (t) => {
  const store = openNodeStore(join(tempDir(t), 'lmdb'));
  t.after(() => store.close());
  const first = header('a.example', 1);
  first.zone.records = [record(1, 'www', '192.0.2.1')];
  store.apply(snapshotEntry(1, first));
  const future = { ...header('a.example', 2), schemaMajor: SCHEMA_MAJOR + 1 };
  store.apply(deltaEntry(2, future, { records: [record(2, 'x', '192.0.2.2')], removedRecordIds: [1] }));
  assert.equal(store.version, 2);
  assert.deepEqual(store.getSnapshot('a.example'), normalised(first));
});

/** Random entries over three domains: snapshots, deltas (including ids that do not exist) and tombstones. */
function randomEntries(seed: number, count: number): ConfigEntry[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const names = ['a.example', 'b.example', 'a.example.org'];
  const ids = () => Array.from({ length: Math.floor(rand() * 4) }, () => 1 + Math.floor(rand() * 12));
  const entries: ConfigEntry[] = [];
  for (let v = 1; v <= count; v++) {
    const domain = pick(names);
    const h = header(domain, v, pick(['active', 'pending', 'disabled']));
    const roll = rand();
    if (roll < 0.1) entries.push(tombstoneEntry(v, domain));
    else if (roll < 0.3) {
      h.zone.records = [...new Set(ids())].map((id) => record(id, `n${id}`, `192.0.2.${v % 250}`));
      h.ruleSet.rules = [...new Set(ids())].map((id) => rule(id, id % 3, `s${v}`));
      entries.push(snapshotEntry(v, h));
    } else
      entries.push(
        deltaEntry(v, h, {
          records: [...new Set(ids())].map((id) => record(id, `n${id}`, `198.51.100.${v % 250}`)),
          removedRecordIds: ids(),
          rules: [...new Set(ids())].map((id) => rule(id, v % 5, `d${v}`)),
          removedRuleIds: ids(),
        }),
      );
  }
  return entries;
}

test('random snapshots, deltas and tombstones converge to the model, through frames, reopens and replays', async (t) => {
  const dir = tempDir(t);
  for (const seed of [1, 2, 3, 4, 5]) {
    const path = join(dir, `lmdb-${seed}`);
    const entries = randomEntries(seed, 120);
    const model = new Map<string, DomainSnapshot>();
    let store = openNodeStore(path);
    const rand = prng(seed * 7919);
    for (let i = 0; i < entries.length;) {
      // Frames of 1 to 8 entries, some resent (a reconnect replays what was already applied), a reopen now and then.
      const n = 1 + Math.floor(rand() * 8);
      const from = rand() < 0.2 ? Math.max(0, i - 3) : i;
      const frame = entries.slice(from, i + n);
      for (const e of entries.slice(i, i + n)) applyToModel(model, e);
      if (frame.length === 1 && rand() < 0.5) store.apply(frame[0]!);
      else store.applyEncoded(frame.map((e) => encodeConfigEntry(e)));
      i += n;
      assert.equal(store.version, Math.min(i, entries.length));
      if (rand() < 0.1) {
        await store.close();
        store = openNodeStore(path);
      }
      assertStoreEquals(store, model, `seed ${seed} after version ${store.version}`);
    }
    // Catch-up: a new node given only the latest state of each domain as snapshots holds the same.
    const fresh = openNodeStore(join(dir, `fresh-${seed}`));
    let v = 0;
    for (const s of model.values()) fresh.apply(snapshotEntry(++v, s));
    for (const domain of model.keys()) assert.deepEqual(fresh.getSnapshot(domain), store.getSnapshot(domain));
    await fresh.close();
    await store.close();
  }
});

test('random entries with batches written on the writer thread, several given before the first is written: converge to the model, heard in order, kept across reopens', async (t) => {
  const dir = tempDir(t);
  for (const seed of [11, 12, 13]) {
    const path = join(dir, `lmdb-${seed}`);
    const entries = randomEntries(seed, 120);
    const model = new Map<string, DomainSnapshot>();
    const heard: number[] = [];
    // Batches of 150 bytes or more go to the writer thread: most of them; a lone tombstone is written here.
    const reopen = () => {
      const s = openNodeStore(path, { offThreadBytes: 150 });
      s.onApplied((e) => heard.push(e.version));
      return s;
    };
    let store = reopen();
    const rand = prng(seed * 31);
    let given: Promise<void>[] = [];
    for (let i = 0; i < entries.length;) {
      const n = 1 + Math.floor(rand() * 6);
      const from = rand() < 0.2 ? Math.max(0, i - 3) : i;
      for (const e of entries.slice(i, i + n)) applyToModel(model, e);
      given.push(store.applyEncoded(entries.slice(from, i + n).map((e) => encodeConfigEntry(e))));
      i += n;
      if (rand() < 0.7 && i < entries.length) continue;
      await Promise.all(given);
      given = [];
      assert.equal(store.version, Math.min(i, entries.length));
      assertStoreEquals(store, model, `seed ${seed} after version ${store.version}`);
      if (rand() < 0.2) {
        await store.close();
        store = reopen();
        assertStoreEquals(store, model, `seed ${seed} reopened at version ${store.version}`);
      }
    }
    assert.ok(
      heard.every((v, k) => k === 0 || v > heard[k - 1]!),
      `heard in version order: ${heard.join(' ')}`,
    );
    await store.close();
  }
});

test('a layout-1 store (one snapshot per domain) is converted in place and keeps its version', async (t) => {
  const path = join(tempDir(t), 'lmdb');
  const old = open({ path });
  const snapshots = old.openDB<Buffer, string>({ name: 'snapshots', encoding: 'binary' });
  const meta = old.openDB<number, string>({ name: 'meta' });
  const a = header('a.example', 4);
  a.zone.records = [record(2, 'www', '192.0.2.2'), record(1, '@', '192.0.2.1')];
  a.ruleSet.rules = [rule(5, 0, 'r')];
  await snapshots.put('a.example', Buffer.from(encodeDomainSnapshot(a)));
  await meta.put('version', 42);
  await old.close();

  const store = openNodeStore(path);
  assert.equal(store.version, 42);
  assert.deepEqual(store.domains(), ['a.example']);
  assert.deepEqual(store.getSnapshot('a.example'), normalised(a));
  await store.close();
  // Reopening finds the current layout and changes nothing.
  const again = openNodeStore(path);
  t.after(() => again.close());
  assert.equal(again.version, 42);
  assert.deepEqual(again.getSnapshot('a.example'), normalised(a));
});

test('a store with a layout this release does not know is emptied and rebuilt from version 0', async (t) => {
  const path = join(tempDir(t), 'lmdb');
  const first = openNodeStore(path);
  first.apply(snapshotEntry(9, header('a.example', 1)));
  await first.close();
  const raw = open({ path });
  await raw.openDB<number, string>({ name: 'meta' }).put('layout', STORE_LAYOUT + 1);
  await raw.close();
  const store = openNodeStore(path);
  t.after(() => store.close());
  assert.equal(store.version, 0);
  assert.deepEqual(store.domains(), []);
});
