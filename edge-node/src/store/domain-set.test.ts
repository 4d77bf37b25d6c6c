// An edge node's domains kept up to date change by change: random rule and record creates, updates and deletes go
// through a real node store (LMDB) as deltas, snapshots and frames, the DomainSet recompiles only what they touched,
// and after every step the served domain picks the same record for every host and the same rules, in the same order,
// for every request as a domain compiled from scratch from what the store holds.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  encodeConfigEntry,
  type ConfigEntry,
  type DomainSnapshot,
  type Rule,
  type ZoneRecord,
} from '@platform/shared/config';
import { encodeRuleBody, parsePeerAddress, type RuleType } from '@platform/shared/match';
import { domainChange, openNodeStore, type NodeStore } from '@platform/shared/node-store';
import { prng } from '@platform/shared/testing/prng';
import { deltaEntry, domainHeader, snapshotEntry, zoneRecord } from '@platform/shared/testing/config-entries';
import { RequestContext } from '../context.js';
import type { CompiledRule } from '../rules/compile.js';
import { RULE_COMPILERS, type EngineRuleType } from '../rules/index.js';
import { proxiedRecord, rule as validRule, snapshot as harnessSnapshot } from '../testing/harness.js';
import { DomainSet } from './domain-set.js';
import { DomainTable, compileDomain, type CompiledDomain } from './snapshot.js';

const APEX = 'edge.example';
const NAMES = ['@', 'www', 'api', '*', '*.dev', 'x.dev'];
const HOSTS = [APEX, `www.${APEX}`, `api.${APEX}`, `other.${APEX}`, `a.dev.${APEX}`, `x.dev.${APEX}`, 'elsewhere.net'];
const PATHS = ['/', '/a/1', '/b', '/c/x/y', '/z'];
const IPS = ['192.0.2.1', '192.0.2.200'];

function randomRecord(id: number, random: () => number): ZoneRecord {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const type = pick(['A', 'A', 'AAAA', 'CNAME', 'TXT', 'MX']);
  const destination =
    type === 'A' ? '192.0.2.10' : type === 'AAAA' ? '2001:db8::10' : type === 'TXT' ? 'v=x' : `t.${APEX}`;
  return {
    ...zoneRecord(id, pick(NAMES), destination, type),
    proxied: random() < 0.6,
    port: pick([80, 443, 8080]),
  };
}

function randomRule(id: number, random: () => number): Rule {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const roll = random();
  if (roll < 0.05) return { id, type: 'waf', enabled: true, priority: 1, body: encodeRuleBody({} as never) }; // no engine
  if (roll < 0.08) return { id, type: 'header', enabled: true, priority: 1, body: new Uint8Array([0xc1]) }; // unreadable
  const type = pick<RuleType>(['header', 'header', 'redirect', 'drop', 'origin_pool']);
  const n = Math.floor(random() * 1000);
  const filters: Record<string, unknown> = { priority: pick([1, 5, 5, 10, 100]), enabled: random() < 0.85 };
  if (random() < 0.4) filters.host_includes = [pick([`www.${APEX}`, `*.${APEX}`, `a.dev.${APEX}`])];
  if (random() < 0.5) filters.path_includes = [pick(['/a/*', '/b', '/c/*'])];
  if (random() < 0.2) filters.ip_includes = ['192.0.2.0/25'];
  if (random() < 0.1) filters.action_mode = 'dry_run';
  const fields =
    type === 'header'
      ? { response_headers: [{ op: 'set', name: 'x-rule', value: String(n) }] }
      : type === 'redirect'
        ? { target: `/to/${n}` }
        : type === 'origin_pool'
          ? { origins: [{ address: '127.0.0.1', port: 1000 + n, weight: 1 }] }
          : {};
  return { ...validRule(type, { ...filters, ...fields }), id };
}

function tempStore(t: TestContext): NodeStore {
  const dir = mkdtempSync(join(tmpdir(), 'edge-domain-set-'));
  const store = openNodeStore(join(dir, 'lmdb'), { durability: 'none' });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

const ids = (rules: readonly CompiledRule[]) => rules.map((r) => r.id);

function requestContext(host: string, path: string, ip: string, recordId: number): RequestContext {
  const c = new RequestContext({
    method: 'GET',
    host,
    path,
    query: '',
    headers: [],
    peer: parsePeerAddress(ip),
    scheme: 'http',
    startedAt: 0,
  });
  c.recordId = recordId;
  return c;
}

/** Every rule each request matches, type by type: what a request holding `domain` gets from it. */
function decisions(domain: CompiledDomain): string[] {
  const out: string[] = [];
  for (const [type, index] of domain.rules)
    for (const host of HOSTS)
      for (const path of PATHS)
        for (const ip of IPS)
          out.push(`${type} ${host}${path} ${ip}: ${ids(index.all(requestContext(host, path, ip, 1), []))}`);
  return out;
}

function assertSameDomain(table: DomainTable, served: CompiledDomain, fresh: CompiledDomain, what: string): void {
  assert.deepEqual(served.snapshot, fresh.snapshot, `${what}: header`);
  assert.deepEqual(served.records, fresh.records, `${what}: records by name`);
  assert.deepEqual([...served.rules.keys()].sort(), [...fresh.rules.keys()].sort(), `${what}: rule types`);
  assert.deepEqual(served.poolActions, fresh.poolActions, `${what}: pool actions`);
  // What the request phases read (byType) is the served indexes, type by type, and nothing else.
  for (const type of Object.keys(RULE_COMPILERS) as EngineRuleType[])
    assert.equal(served.byType[type], served.rules.get(type), `${what}: byType.${type}`);
  assert.deepEqual(Object.keys(served.byType), Object.keys(RULE_COMPILERS), `${what}: byType's shape`);
  const freshTable = new DomainTable();
  freshTable.set(fresh);
  for (const host of HOSTS) {
    const got = table.lookup(host);
    const want = freshTable.lookup(host);
    assert.deepEqual(got?.record, want?.record, `${what}: record for ${host}`);
    for (const [type, index] of fresh.rules) {
      const mine = served.rules.get(type)!;
      assert.deepEqual(ids(mine.rules), ids(index.rules), `${what}: ${type} order`);
      for (const path of PATHS)
        for (const ip of IPS) {
          const ctx = () => requestContext(host, path, ip, want?.record.id ?? 0);
          const [a, b] = [ctx(), ctx()];
          assert.deepEqual(ids(mine.all(a, [])), ids(index.all(b, [])), `${what}: ${type} ${host}${path} ${ip}`);
          assert.deepEqual(a.hits, b.hits, `${what}: ${type} dry-run hits ${host}${path} ${ip}`);
        }
    }
  }
}

function runSequence(t: TestContext, seed: number, steps: number): { patched: number } {
  const random = prng(seed);
  const store = tempStore(t);
  const table = new DomainTable();
  const domains = new DomainSet(table, store);
  let patched = 0;
  // As the node wires it (node.ts, main.ts): the store's events drive the domain set.
  store.onApplied((e) => {
    if (e.kind === 'delta') patched++;
    domains.refresh(domainChange(e));
  });

  let version = 0;
  let serial = 1;
  let nextId = 1;
  const records = new Map<number, ZoneRecord>();
  const rules = new Map<number, Rule>();
  const header = (): DomainSnapshot => {
    const h = domainHeader(APEX, serial++);
    h.settings.cacheCapMb = serial;
    return h;
  };
  const snapshot = (): DomainSnapshot => {
    const h = header();
    h.zone.records = [...records.values()].sort((a, b) => a.id - b.id);
    h.ruleSet.rules = [...rules.values()].sort((a, b) => a.id - b.id);
    return h;
  };
  store.apply(snapshotEntry(++version, snapshot()));

  for (let step = 0; step < steps; step++) {
    const entries: ConfigEntry[] = [];
    const kinds: string[] = [];
    for (let e = Math.floor(random() * 3); e >= 0; e--) {
      if (random() < 0.08) {
        kinds.push('snapshot');
        rules.set(nextId, randomRule(nextId++, random));
        entries.push(snapshotEntry(++version, snapshot()));
        continue;
      }
      const change = { records: [] as ZoneRecord[], removedRecordIds: [] as number[] };
      const ruleChange = { rules: [] as Rule[], removedRuleIds: [] as number[] };
      for (let c = 1 + Math.floor(random() * 3); c > 0; c--) {
        const onRules = random() < 0.6;
        const map: Map<number, Rule | ZoneRecord> = onRules ? rules : records;
        const existing = [...map.keys()];
        const op = random();
        const id = op < 0.45 || existing.length === 0 ? nextId++ : existing[Math.floor(random() * existing.length)]!;
        if (op < 0.75 || existing.length === 0) {
          // Create, or update (type, filters, priority, name may all change).
          if (onRules) {
            const r = randomRule(id, random);
            rules.set(id, r);
            ruleChange.rules.push(r);
          } else {
            const r = randomRecord(id, random);
            records.set(id, r);
            change.records.push(r);
          }
        } else {
          map.delete(id);
          if (onRules) ruleChange.removedRuleIds.push(id);
          else change.removedRecordIds.push(id);
        }
      }
      kinds.push(
        `delta records +${change.records.map((r) => r.id)} -${change.removedRecordIds} rules +${ruleChange.rules.map((r) => r.id)} -${ruleChange.removedRuleIds}`,
      );
      entries.push(deltaEntry(++version, header(), { ...change, ...ruleChange }));
    }
    // A request that started before the change keeps deciding with the domain it holds, unchanged.
    const previous = table.get(APEX)!;
    const previousDecisions = decisions(previous);
    if (random() < 0.5) store.applyEncoded(entries.map(encodeConfigEntry));
    else for (const entry of entries) store.apply(entry);
    assert.deepEqual(decisions(previous), previousDecisions);

    const what = `seed ${seed} step ${step} (${kinds.join(', ')})`;
    const served = table.get(APEX);
    assert.ok(served, what);
    assertSameDomain(table, served, compileDomain(store.getSnapshot(APEX)!), what);
  }
  return { patched };
}

for (const seed of [1, 2, 3])
  test(`random rule and record deltas, seed ${seed}: the patched domain picks the same records and rules as one compiled from scratch`, (t) => {
    const { patched } = runSequence(t, seed, 100);
    assert.ok(patched > 100, `deltas applied: ${patched}`);
  });

test('a rule delta recompiles only the rules it names: the others keep their compiled objects and health', (t) => {
  const store = tempStore(t);
  const table = new DomainTable();
  const domains = new DomainSet(table, store);
  store.onApplied((e) => domains.refresh(domainChange(e)));
  const first = domainHeader(APEX, 1);
  first.zone.records = [{ ...zoneRecord(1, 'www', '192.0.2.1'), proxied: true }];
  first.ruleSet.rules = [
    { ...validRule('header', { response_headers: [{ op: 'set', name: 'x', value: '1' }] }), id: 10 },
    { ...validRule('origin_pool', { origins: [{ address: '127.0.0.1', port: 9001, weight: 1 }] }), id: 11 },
    { ...validRule('redirect', { path_includes: ['/old'], target: '/new' }), id: 12 },
  ];
  store.apply(snapshotEntry(1, first));
  const before = table.get(APEX)!;
  const pool = before.rules.get('origin_pool')!.rules[0]!;
  const redirect = before.rules.get('redirect')!.rules[0]!;
  store.apply(
    deltaEntry(2, domainHeader(APEX, 2), {
      rules: [{ ...validRule('header', { response_headers: [{ op: 'set', name: 'x', value: '2' }] }), id: 10 }],
    }),
  );
  const after = table.get(APEX)!;
  assert.notEqual(after, before, 'a new compiled domain: a request in flight keeps the one it started with');
  assert.equal(after.rules.get('origin_pool')!.rules[0], pool, 'untouched type: same compiled rule');
  assert.equal(after.rules.get('redirect')!.rules[0], redirect);
  const headerValue = (d: CompiledDomain) =>
    (d.rules.get('header')!.rules[0]!.fields as unknown as { response_headers: Array<{ value: string }> })
      .response_headers[0]!.value;
  assert.equal(headerValue(after), '2');
  assert.equal(headerValue(before), '1', 'the previous domain still holds its own index');
});

test("the table's memo of lookups: hosts that share a slot, new strings for the same host, and every change of the table", () => {
  const table = new DomainTable();
  // 2,000 hosts and a memo of 512 slots: every slot is shared, and each lookup must still give the host's own record.
  const names = Array.from({ length: 2000 }, (_, i) => `h${i}`);
  const records = names.map((n, i) => ({ ...proxiedRecord(n, 1000 + i) }));
  const domain = (recs: ZoneRecord[], state = 'active') =>
    compileDomain(harnessSnapshot(APEX, { records: [...recs, { ...proxiedRecord('*', 999), proxied: false }], state }));
  table.set(domain(records));
  const fresh = (s: string) => s.split('').join(''); // an equal string, not the same one (as uWS gives a Host)
  const expect = (host: string, port: number | undefined, what: string) => {
    const m = table.lookup(fresh(host));
    assert.equal(m?.record.port, port, `${what}: ${host}`);
    if (m) assert.equal(m.host, host, `${what}: the match's host`);
  };
  const random = prng(7);
  for (let round = 0; round < 3; round++)
    for (let k = 0; k < 4000; k++) {
      const i = Math.floor(random() * names.length);
      expect(`${names[i]}.${APEX}`, 1000 + i, `round ${round}`);
      if (k % 7 === 0) expect(`zz${names[i]}.${APEX}`, undefined, `round ${round}, wildcard not proxied`);
    }
  // A changed domain (records moved to other ports, one removed), then a disabled one, then none: no old answer.
  table.set(domain(records.slice(1).map((r) => ({ ...r, port: r.port + 5000 }))));
  expect(`${names[0]}.${APEX}`, undefined, 'after the change, removed');
  for (let i = 1; i < names.length; i += 7) expect(`${names[i]}.${APEX}`, 6000 + i, 'after the change');
  table.set(domain(records, 'disabled'));
  for (let i = 0; i < names.length; i += 13) expect(`${names[i]}.${APEX}`, undefined, 'disabled');
  table.set(domain(records));
  expect(`${names[5]}.${APEX}`, 1005, 'enabled again');
  table.delete(APEX);
  for (let i = 0; i < names.length; i += 13) expect(`${names[i]}.${APEX}`, undefined, 'deleted');
});
