// The node store's records in blocks (layout 3): the block format, random changes spread over many blocks checked
// against a simple model through every read (getRecord, getRecords, readDomain, getSnapshot) with restarts between a
// snapshot and its deltas, and the move from layout 2 (one value per record).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import {
  decodeZoneRecord,
  encodeConfigEntry,
  encodeSnapshotHeader,
  encodeZoneRecord,
  type ConfigEntry,
  type ZoneRecord,
} from '../config/index.js';
import { prng } from '../testing/prng.js';
import { deltaEntry, domainHeader, snapshotEntry, tombstoneEntry, zoneRecord } from '../testing/config-entries.js';
import { openNodeStore, STORE_LAYOUT, type NodeStore } from './index.js';
import {
  RECORD_BLOCK,
  blockOf,
  blockRecords,
  changedBlock,
  encodeBlock,
  findInBlock,
  groupByBlock,
  type RecordPart,
} from './record-blocks.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'node-store-blocks-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const part = (id: number, tag = ''): RecordPart => ({
  id,
  bytes: encodeZoneRecord(zoneRecord(id, `n${id}${tag}`, '192.0.2.1')),
});
const ids = (parts: Iterable<RecordPart>) => [...parts].map((p) => p.id);

test('a block keeps its records in id order and finds each by id; grouping sorts, keeps the last of an id; a change removes then writes', () => {
  const parts = [part(0), part(5), part(127)];
  const block = encodeBlock(parts);
  assert.deepEqual(ids(blockRecords(block)), [0, 5, 127]);
  for (const p of parts) assert.deepEqual(decodeZoneRecord(findInBlock(block, p.id)!), decodeZoneRecord(p.bytes));
  assert.equal(findInBlock(block, 6), undefined);
  assert.equal(findInBlock(block, 128), undefined);
  assert.deepEqual(ids(blockRecords(encodeBlock([]))), []);
  // A view into a larger buffer reads the same.
  const padded = new Uint8Array(block.length + 7);
  padded.set(block, 3);
  assert.deepEqual(ids(blockRecords(padded.subarray(3, 3 + block.length))), [0, 5, 127]);
  assert.throws(() => [...blockRecords(block.subarray(0, block.length - 1))], RangeError);

  const grouped = groupByBlock([part(2 * RECORD_BLOCK + 44), part(2), part(RECORD_BLOCK + 1), part(2, 'b'), part(1)]);
  assert.deepEqual([...grouped.keys()].sort(), [0, 1, 2]);
  assert.deepEqual(ids(grouped.get(0)!), [1, 2]);
  assert.equal(decodeZoneRecord(grouped.get(0)![1]!.bytes).name, 'n2b');
  assert.equal(blockOf(RECORD_BLOCK - 1), 0);
  assert.equal(blockOf(RECORD_BLOCK), 1);

  const changed = changedBlock(block, new Set([5, 127]), [part(127, 'x'), part(3)]);
  assert.deepEqual(ids(changed), [0, 3, 127]);
  assert.equal(decodeZoneRecord(changed[2]!.bytes).name, 'n127x');
  assert.deepEqual(changedBlock(undefined, new Set([1]), []), []);
});

/** The model: per domain its records by id (the header is checked by the other store tests). */
type Model = Map<string, Map<number, ZoneRecord>>;

function applyModel(model: Model, e: ConfigEntry): void {
  if (e.deleted) {
    model.delete(e.domain);
    return;
  }
  if (e.delta) {
    const m = model.get(e.domain) ?? new Map<number, ZoneRecord>();
    for (const id of e.removedRecordIds ?? []) m.delete(id);
    for (const r of e.snapshot?.zone.records ?? []) m.set(r.id, r);
    model.set(e.domain, m);
    return;
  }
  model.set(e.domain, new Map(e.snapshot!.zone.records.map((r) => [r.id, r])));
}

function assertMatches(store: NodeStore, model: Model, probe: number[], what: string): void {
  assert.deepEqual(store.domains().sort(), [...model.keys()].sort(), `${what}: domains`);
  for (const [domain, m] of model) {
    const want = [...m.values()].sort((a, b) => a.id - b.id);
    const wantCore = want.map((r) => `${r.id} ${r.name} ${r.destination}`);
    assert.deepEqual(
      store.getRecords(domain).map((r) => `${r.id} ${r.name} ${r.destination}`),
      wantCore,
      `${what}: ${domain} getRecords`,
    );
    assert.deepEqual(
      store.getSnapshot(domain)!.zone.records.map((r) => `${r.id} ${r.name} ${r.destination}`),
      wantCore,
      `${what}: ${domain} getSnapshot`,
    );
    const read = store.readDomain(domain)!;
    const got: string[] = [];
    for (const r of read.records) got.push(`${r.id} ${r.name} ${r.destination}`);
    read.close();
    assert.deepEqual(got, wantCore, `${what}: ${domain} readDomain`);
    for (const id of probe) {
      const r = store.getRecord(domain, id);
      const w = m.get(id);
      assert.equal(r ? `${r.id} ${r.name} ${r.destination}` : undefined, w && `${w.id} ${w.name} ${w.destination}`);
    }
  }
}

for (const offThread of [false, true])
  test(`random snapshots, deltas and deletions over many blocks match a model, with restarts between a snapshot and its deltas${offThread ? ' (written on the writer thread)' : ''}`, async (t) => {
    const dir = tempDir(t);
    const opts = { offThreadBytes: offThread ? 0 : Infinity };
    for (const seed of [11, 12, 13]) {
      const rand = prng(seed);
      const path = join(dir, `lmdb-${seed}`);
      let store = openNodeStore(path, opts);
      const model: Model = new Map();
      const domains = ['a.example', 'b.example'];
      // Ids over about 8 blocks, the boundaries included.
      const anId = () =>
        rand() < 0.2
          ? RECORD_BLOCK * Math.floor(rand() * 8) - (rand() < 0.5 ? 1 : 0)
          : Math.floor(rand() * 8 * RECORD_BLOCK);
      const someIds = (n: number) => [...new Set(Array.from({ length: n }, () => Math.max(0, anId())))];
      const probe = [0, 1, RECORD_BLOCK - 1, RECORD_BLOCK, 3 * RECORD_BLOCK + 5, ...someIds(10)];
      for (let v = 1; v <= 60; v++) {
        const domain = domains[Math.floor(rand() * domains.length)]!;
        const h = domainHeader(domain, v);
        const roll = rand();
        let e: ConfigEntry;
        if (roll < 0.08) e = tombstoneEntry(v, domain);
        else if (roll < 0.3) {
          h.zone.records = someIds(Math.floor(rand() * 300)).map((id) => zoneRecord(id, `s${v}-${id}`, '192.0.2.1'));
          e = snapshotEntry(v, h);
        } else
          e = deltaEntry(v, h, {
            records: someIds(Math.floor(rand() * 40)).map((id) => zoneRecord(id, `d${v}-${id}`, '198.51.100.1')),
            removedRecordIds: someIds(Math.floor(rand() * 40)),
          });
        applyModel(model, e);
        await store.applyEncoded([encodeConfigEntry(e)]);
        // A restart right after a snapshot (so its deltas come to a reopened store), and now and then otherwise.
        if ((!e.deleted && !e.delta) || rand() < 0.1) {
          await store.close();
          store = openNodeStore(path, opts);
          assert.equal(store.version, v);
        }
        assertMatches(store, model, probe, `seed ${seed} version ${v}`);
      }
      await store.close();
    }
  });

test('a layout-2 store (one value per record) is converted to blocks in place and keeps its version and records', async (t) => {
  const path = join(tempDir(t), 'lmdb');
  const raw = open({ path });
  const meta = raw.openDB<number, string>({ name: 'meta' });
  const headers = raw.openDB<Buffer, string>({ name: 'domains', encoding: 'binary' });
  const records = raw.openDB<Buffer, [string, number]>({ name: 'records', encoding: 'binary' });
  const model: Model = new Map();
  for (const [domain, count] of [
    ['a.example', 3 * RECORD_BLOCK + 7],
    ['b.example', 2],
  ] as const) {
    await headers.put(domain, Buffer.from(encodeSnapshotHeader(domainHeader(domain, 1))));
    const m = new Map<number, ZoneRecord>();
    for (let i = 0; i < count; i++) {
      const r = zoneRecord(i * 3 + 1, `r${i}`, '192.0.2.7');
      m.set(r.id, r);
      await records.put([domain, r.id], Buffer.from(encodeZoneRecord(r)));
    }
    model.set(domain, m);
  }
  await meta.put('layout', 2);
  await meta.put('version', 77);
  await raw.close();

  let store = openNodeStore(path);
  assert.equal(store.version, 77);
  assertMatches(store, model, [1, 4, 2, 3 * RECORD_BLOCK + 1, 10_000], 'converted');
  // A delta after the move, then a reopen: layout 3 is kept as it is.
  const e = deltaEntry(78, domainHeader('a.example', 2), {
    records: [zoneRecord(2, 'two', '192.0.2.2')],
    removedRecordIds: [1],
  });
  applyModel(model, e);
  await store.applyEncoded([encodeConfigEntry(e)]);
  await store.close();
  store = openNodeStore(path);
  t.after(() => store.close());
  assert.equal(store.version, 78);
  assertMatches(store, model, [1, 2, 4], 'after a delta and a reopen');
  const check = open({ path, readOnly: true });
  const layout = check.openDB<number, string>({ name: 'meta' }).get('layout');
  await check.close();
  assert.equal(layout, STORE_LAYOUT);
});
