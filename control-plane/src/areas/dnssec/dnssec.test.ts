// DNSSEC through the API: turning it on and off, who may, bad input; the key rollovers step by step on a moved
// clock (ZSK pre-publication, KSK double signature with CDS naming both), each step one config-log entry whose
// snapshot carries the keys sealed for nodes, never a plain private key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desc, eq } from 'drizzle-orm';
import { decodeDomainSnapshot, openDnssecKey } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { configLog, workflowOutbox } from '../../db/schema.js';
import { rollDomainKeys } from './service.js';
import { DEFAULT_TIMINGS } from './rollover.js';

interface Status {
  enabled: boolean;
  status: string;
  ds: Array<{ key_tag: number; record: string }>;
  keys: Array<{ role: string; state: string; key_tag: number }>;
}

test('dnssec: on and off, permissions, bad input, rollovers on a moved clock', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const viewer = await cp.user();
  const name = await cp.domain(owner.key, 'signed.example.org');
  await cp.addMember(name, viewer.id, 'viewer');
  const url = `/domains/${name}/dnssec`;
  const get = async () => (await cp.call(owner.key, 'GET', url)).json<Status>();
  const latestSnapshot = async () => {
    const [row] = await cp.database.db.select().from(configLog).orderBy(desc(configLog.version)).limit(1);
    return decodeDomainSnapshot(row.payload!);
  };

  await t.test('bad input is 400 with an error; a viewer may read but not write', async () => {
    for (const body of [{ enabled: 'yes' }, { enabled: true, extra: 1 }, {}, { enabled: null }, [true]]) {
      const res = await cp.call(owner.key, 'PUT', url, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(typeof res.json().error, 'string');
    }
    // An oversized body is refused before any work.
    const big = await cp.call(owner.key, 'PUT', url, { enabled: true, pad: 'x'.repeat(2_000_000) });
    assert.ok([400, 413].includes(big.statusCode), String(big.statusCode));
    assert.equal((await get()).enabled, false);
    assert.equal((await cp.call(viewer.key, 'GET', url)).statusCode, 200);
    assert.equal((await cp.call(viewer.key, 'PUT', url, { enabled: true })).statusCode, 403);
    const ext = await cp.domain(owner.key, 'elsewhere.example.net', 'external');
    const res = await cp.call(owner.key, 'PUT', `/domains/${ext}/dnssec`, { enabled: true });
    assert.deepEqual(
      [res.statusCode, res.json().error],
      [400, 'DNSSEC needs the platform to serve the zone (dns_mode managed)'],
    );
    assert.equal((await cp.call(owner.key, 'GET', `/domains/${ext}/dnssec`)).json().status, 'unavailable');
    const stranger = await cp.user();
    assert.equal((await cp.call(stranger.key, 'GET', url)).statusCode, 404);
  });

  await t.test('on: two keys, the DS, the rollover workflow, the keys sealed in the snapshot', async () => {
    const res = await cp.call(owner.key, 'PUT', url, { enabled: true });
    assert.equal(res.statusCode, 200, res.body);
    const s = res.json<Status>();
    assert.deepEqual(s.keys.map((k) => `${k.role} ${k.state}`).sort(), ['ksk active', 'zsk active']);
    assert.equal(s.ds.length, 1);
    const starts = await cp.database.db
      .select()
      .from(workflowOutbox)
      .where(eq(workflowOutbox.workflowId, `dnssec-rollover:${name}`));
    assert.equal(starts.length, 1);
    const snap = await latestSnapshot();
    assert.equal(snap.dnssec?.enabled, true);
    assert.equal(snap.dnssec!.keys.length, 2);
    const token = ensureNodeToken(cp.config.dataDir, undefined);
    for (const k of snap.dnssec!.keys) {
      assert.equal(k.privateKeyDer.length, 0, 'never a plain private key');
      assert.ok(openDnssecKey(token, name, k.publicKey, k.privateKeySealed).length > 0);
      assert.throws(() => openDnssecKey(token, 'other.example', k.publicKey, k.privateKeySealed));
    }
  });

  await t.test('ZSK rollover: published, then signing, then removed', async () => {
    const t0 = Date.now();
    const zsk0 = (await get()).keys.find((k) => k.role === 'zsk')!;
    let step = await rollDomainKeys(cp.app, name, t0);
    assert.equal(step.enabled, true);
    assert.ok(step.next_at_ms! >= t0 + DEFAULT_TIMINGS.zskLifetimeMs - 60_000, 'nothing due before the lifetime');
    const at1 = t0 + DEFAULT_TIMINGS.zskLifetimeMs + 1000;
    step = await rollDomainKeys(cp.app, name, at1);
    assert.equal(step.next_at_ms, at1 + DEFAULT_TIMINGS.publishWaitMs);
    let zsks = (await get()).keys.filter((k) => k.role === 'zsk');
    assert.deepEqual(zsks.map((k) => k.state).sort(), ['active', 'published']);
    let snap = await latestSnapshot();
    assert.deepEqual(
      snap.dnssec!.keys.filter((k) => k.flags === 256).map((k) => [k.published, k.signing]),
      [
        [true, true],
        [true, false],
      ],
    );
    const at2 = at1 + DEFAULT_TIMINGS.publishWaitMs;
    await rollDomainKeys(cp.app, name, at2);
    zsks = (await get()).keys.filter((k) => k.role === 'zsk');
    assert.equal(zsks.find((k) => k.key_tag === zsk0.key_tag)?.state, 'retired');
    snap = await latestSnapshot();
    assert.equal(snap.dnssec!.keys.filter((k) => k.flags === 256 && k.signing).length, 1);
    await rollDomainKeys(cp.app, name, at2 + DEFAULT_TIMINGS.retireWaitMs);
    zsks = (await get()).keys.filter((k) => k.role === 'zsk');
    assert.deepEqual(
      zsks.map((k) => k.state),
      ['active'],
    );
    assert.notEqual(zsks[0].key_tag, zsk0.key_tag);
  });

  await t.test('KSK rollover: CDS and the DS list name both keys, then only the new one', async () => {
    const ksk0 = (await get()).keys.find((k) => k.role === 'ksk')!;
    const at1 = Date.now() + DEFAULT_TIMINGS.kskLifetimeMs + 1000;
    await rollDomainKeys(cp.app, name, at1);
    let s = await get();
    assert.equal(s.ds.length, 2, 'both KSKs while the parent picks the new one up');
    let snap = await latestSnapshot();
    assert.deepEqual(
      snap.dnssec!.keys.filter((k) => k.flags === 257).map((k) => [k.signing, k.cds]),
      [
        [true, true],
        [true, true],
      ],
    );
    const at2 = at1 + DEFAULT_TIMINGS.dsWaitMs;
    await rollDomainKeys(cp.app, name, at2);
    s = await get();
    assert.equal(s.ds.length, 1);
    assert.notEqual(s.ds[0].key_tag, ksk0.key_tag);
    snap = await latestSnapshot();
    assert.deepEqual(
      snap.dnssec!.keys.filter((k) => k.flags === 257).map((k) => [k.signing, k.cds]),
      [
        [true, false],
        [true, true],
      ],
    );
    await rollDomainKeys(cp.app, name, at2 + DEFAULT_TIMINGS.dsWaitMs);
    assert.deepEqual(
      (await get()).keys.filter((k) => k.role === 'ksk').map((k) => k.state),
      ['active'],
    );
  });

  await t.test('off: unsigned, keys dropped, the workflow told to stop', async () => {
    const res = await cp.call(owner.key, 'PUT', url, { enabled: false });
    assert.deepEqual([res.statusCode, res.json<Status>().keys, res.json<Status>().status], [200, [], 'disabled']);
    assert.equal((await latestSnapshot()).dnssec ?? null, null);
    assert.deepEqual(await rollDomainKeys(cp.app, name), { enabled: false, next_at_ms: null });
  });
});
