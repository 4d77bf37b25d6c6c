// NodeStore on a real LMDB directory: apply, tombstones, idempotence, resume after reopen, batches.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeDomainSnapshot, encodeConfigEntry, encodeDomainSnapshot, type DomainSnapshot } from '../config/index.js';
import { openNodeStore, type AppliedEvent } from './index.js';
import { domainHeader, zoneRecord } from '../testing/config-entries.js';
import { packEntries, unpackEntries } from '../config/frames.js';
import { ensureNodeToken, readNodeToken } from '../node-token.js';
import { callInProcessesAtOnce } from '../testing/at-once.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'node-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function snapshot(name: string, serial: number, addresses: string[]): DomainSnapshot {
  const s = domainHeader(name, serial);
  s.ruleSet.version = 0;
  s.zone.records = addresses.map((a, i) => ({ ...zoneRecord(i + 1, 'www', a), ttl: 120 }));
  return s;
}

test('apply stores the snapshot with its version, tombstones delete, old versions are ignored', async (t) => {
  const store = openNodeStore(join(tempDir(t), 'lmdb'));
  t.after(() => store.close());
  const events: AppliedEvent[] = [];
  store.onApplied((e) => events.push(e));
  assert.equal(store.version, 0);
  store.apply({
    version: 3,
    domain: 'example.org',
    deleted: false,
    snapshot: snapshot('example.org', 2, ['192.0.2.1']),
  });
  store.apply({
    version: 4,
    domain: 'example.net',
    deleted: false,
    snapshot: snapshot('example.net', 2, ['192.0.2.2']),
  });
  assert.equal(store.version, 4);
  assert.deepEqual(store.domains().sort(), ['example.net', 'example.org']);
  assert.equal(store.getSnapshot('example.org')!.zone.records[0]!.destination, '192.0.2.1');
  // An older or repeated version changes nothing and notifies nobody.
  store.apply({
    version: 3,
    domain: 'example.org',
    deleted: false,
    snapshot: snapshot('example.org', 9, ['198.51.100.9']),
  });
  store.apply({ version: 4, domain: 'example.org', deleted: true });
  assert.equal(store.getSnapshot('example.org')!.zone.serial, 2);
  store.apply({ version: 5, domain: 'example.org', deleted: true });
  assert.equal(store.getSnapshot('example.org'), undefined);
  assert.deepEqual(store.domains(), ['example.net']);
  assert.deepEqual(
    events.map((e) => [e.version, e.domain, e.kind, e.deleted]),
    [
      [3, 'example.org', 'snapshot', false],
      [4, 'example.net', 'snapshot', false],
      [5, 'example.org', 'deleted', true],
    ],
  );
});

test('a reopened store resumes at its version with the same snapshots', async (t) => {
  const path = join(tempDir(t), 'lmdb');
  const first = openNodeStore(path);
  first.apply({
    version: 10,
    domain: 'example.org',
    deleted: false,
    snapshot: snapshot('example.org', 5, ['192.0.2.5']),
  });
  await first.close();
  const second = openNodeStore(path);
  t.after(() => second.close());
  assert.equal(second.version, 10);
  const expected = decodeDomainSnapshot(encodeDomainSnapshot(snapshot('example.org', 5, ['192.0.2.5'])));
  assert.deepEqual(second.getSnapshot('example.org'), expected);
});

test('applyEncoded applies a frame of entries at once, skipping those already applied', async (t) => {
  const store = openNodeStore(join(tempDir(t), 'lmdb'));
  t.after(() => store.close());
  store.apply({ version: 2, domain: 'a.example', deleted: false, snapshot: snapshot('a.example', 1, ['192.0.2.1']) });
  const entry = (version: number, domain: string, s?: DomainSnapshot) =>
    encodeConfigEntry(
      s
        ? { version, domain, deleted: false, snapshotBytes: encodeDomainSnapshot(s) }
        : { version, domain, deleted: true, snapshotBytes: new Uint8Array(0) },
    );
  const frame = packEntries([
    entry(1, 'old.example', snapshot('old.example', 1, ['192.0.2.99'])),
    entry(2, 'a.example', snapshot('a.example', 9, ['192.0.2.99'])),
    entry(3, 'b.example', snapshot('b.example', 1, ['192.0.2.3'])),
    entry(4, 'a.example'),
  ]);
  let applied = 0;
  store.onApplied(() => applied++);
  store.applyEncoded(unpackEntries(frame));
  assert.equal(applied, 2);
  assert.equal(store.version, 4);
  assert.deepEqual(store.domains(), ['b.example']);
  // Replaying the same frame (a resent stream after a reconnect) applies nothing twice.
  store.applyEncoded(unpackEntries(frame));
  assert.equal(applied, 2);
});

test('an unreadable snapshot keeps the previous one and still moves the version on', async (t) => {
  const store = openNodeStore(join(tempDir(t), 'lmdb'));
  t.after(() => store.close());
  store.apply({ version: 1, domain: 'a.example', deleted: false, snapshot: snapshot('a.example', 1, ['192.0.2.1']) });
  const future = encodeConfigEntry({
    version: 2,
    domain: 'a.example',
    deleted: false,
    snapshotBytes: encodeDomainSnapshot({ ...snapshot('a.example', 2, ['192.0.2.2']), schemaMajor: 2 }),
  });
  store.applyEncoded([future]);
  assert.equal(store.version, 2);
  assert.equal(store.getSnapshot('a.example')!.zone.serial, 1);
});

test('the node token is generated once with mode 0600 and a configured token wins', (t) => {
  const dir = tempDir(t);
  assert.equal(readNodeToken(dir), undefined);
  const token = ensureNodeToken(dir);
  assert.match(token, /^[0-9a-f]{64}$/);
  assert.equal(statSync(join(dir, 'node-token')).mode & 0o777, 0o600);
  assert.equal(ensureNodeToken(dir), token);
  assert.equal(readNodeToken(dir), token);
  assert.equal(ensureNodeToken(dir, 'configured-secret'), 'configured-secret');
});

test('processes generating the node token at once all get the one that was written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'node-token-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const module = fileURLToPath(new URL('../node-token.ts', import.meta.url));
  const tokens = await callInProcessesAtOnce<string>(6, module, 'ensureNodeToken', [dir]);
  assert.deepEqual(new Set(tokens), new Set([readNodeToken(dir)]));
  assert.match(tokens[0]!, /^[0-9a-f]{64}$/);
});

test('a large batch is written on the writer thread: meanwhile this thread runs and reads what was committed before, then all of it; a restart keeps it', async (t) => {
  const path = join(tempDir(t), 'lmdb');
  const store = openNodeStore(path);
  const events: AppliedEvent[] = [];
  store.onApplied((e) => events.push(e));
  store.apply({
    version: 1,
    domain: 'example.org',
    deleted: false,
    snapshot: snapshot('example.org', 1, ['192.0.2.1']),
  });
  // 40,000 records (well over a megabyte) and record 1 changed, in one delta.
  const header = domainHeader('example.org', 2);
  const added = Array.from({ length: 40_000 }, (_, i) => zoneRecord(100 + i, `n${i}`, `10.0.${i >> 8}.${i & 255}`));
  const large = encodeConfigEntry({
    version: 2,
    domain: 'example.org',
    deleted: false,
    delta: true,
    snapshot: {
      ...header,
      zone: { ...header.zone, records: [...added, { ...zoneRecord(1, 'www', '192.0.2.2'), ttl: 120 }] },
    },
    removedRecordIds: [],
    removedRuleIds: [],
  });
  assert.ok(large.length > 1 << 20, `entry of ${large.length} bytes`);
  let written = false;
  const applied = Promise.resolve(store.applyEncoded([large])).then(() => {
    written = true;
  });
  // A small entry given meanwhile waits for it.
  const after = store.apply({
    version: 3,
    domain: 'other.example',
    deleted: false,
    snapshot: snapshot('other.example', 1, ['192.0.2.9']),
  });
  let turnsBefore = 0;
  while (!written) {
    // Within one turn, the state before the batch whole or after it whole.
    if (store.version === 1) {
      turnsBefore++;
      assert.equal(store.getRecord('example.org', 1)?.destination, '192.0.2.1');
      assert.equal(store.getRecord('example.org', 100), undefined);
      assert.equal(events.length, 1);
    } else {
      assert.equal(store.getRecord('example.org', 1)?.destination, '192.0.2.2');
      assert.equal(store.getRecord('example.org', 40_099)?.name, 'n39999');
    }
    await new Promise((r) => setImmediate(r));
  }
  await applied;
  await after;
  assert.ok(turnsBefore > 0, 'this thread ran while the batch was written');
  assert.deepEqual(
    events.map((e) => [e.version, e.domain, e.kind, e.recordIds.length]),
    [
      [1, 'example.org', 'snapshot', 0],
      [2, 'example.org', 'delta', 40_001],
      [3, 'other.example', 'snapshot', 0],
    ],
  );
  assert.equal(store.version, 3);
  assert.equal(store.getRecords('example.org').length, 40_001);
  await store.close();
  const reopened = openNodeStore(path);
  t.after(() => reopened.close());
  assert.equal(reopened.version, 3);
  assert.equal(reopened.getRecord('example.org', 1)?.destination, '192.0.2.2');
  assert.equal(reopened.getRecords('example.org').length, 40_001);
  assert.deepEqual(reopened.domains().sort(), ['example.org', 'other.example']);
});

test('a store keeping its writer thread ready (writerReady) writes a large batch there, closes while the thread starts, and does not keep a process up', async (t) => {
  const path = join(tempDir(t), 'lmdb');
  // Closed while the thread it started at open is still loading: the close ends it and resolves.
  await openNodeStore(path, { writerReady: true }).close();
  const store = openNodeStore(path, { writerReady: true, offThreadBytes: 0 });
  const events: AppliedEvent[] = [];
  store.onApplied((e) => events.push(e));
  const entry = (version: number, address: string) =>
    encodeConfigEntry({
      version,
      domain: 'example.org',
      deleted: false,
      snapshot: snapshot('example.org', version, [address]),
    });
  await store.applyEncoded([entry(1, '192.0.2.1')]);
  await store.applyEncoded([entry(2, '192.0.2.2')]);
  assert.deepEqual(
    events.map((e) => [e.version, e.kind]),
    [
      [1, 'snapshot'],
      [2, 'snapshot'],
    ],
  );
  assert.equal(store.getRecord('example.org', 1)?.destination, '192.0.2.2');
  await store.close();
  // A process whose store holds an idle ready thread (never closed) still exits when it has nothing else to do.
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `import { openNodeStore } from ${JSON.stringify(new URL('./index.ts', import.meta.url).href)};
       const s = openNodeStore(${JSON.stringify(path)}, { writerReady: true });
       console.log(s.version);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  assert.equal(code, 0, 'the process exited by itself');
  assert.equal(out.trim(), '2');
});
