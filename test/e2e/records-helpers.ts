// Helpers shared by the records e2e tests: a control plane with one owner and one domain, and config-log counts.
import { eq, sql } from 'drizzle-orm';
import { domains } from '../../control-plane/src/db/schema.js';
import { rowsOf } from '../../control-plane/src/db/migrate.js';
import { setOverride } from '../../control-plane/src/plans/subscriptions.js';
import { buildDomainSnapshot } from '../../control-plane/src/config-log/snapshot.js';
import { decodeDomainSnapshot, type DomainSnapshot } from '@platform/shared/config';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../helpers/control-plane.js';

export interface RecordsFixture {
  cp: TestControlPlane;
  key: string;
  userId: number;
  domain: string;
  domainId: number;
  url: (path?: string) => string;
  /** Number of config-log entries of the domain so far. */
  logCount: () => Promise<number>;
  setOverride: (field: string, value: number | boolean | null) => Promise<void>;
  setState: (state: string) => Promise<void>;
}

export async function recordsFixture(
  t: { after(fn: () => Promise<void> | void): void },
  name = 'example.org',
  env: Record<string, string> = {},
): Promise<RecordsFixture> {
  const cp = await startTestControlPlane(t, env);
  const u = await cp.user();
  const domain = await cp.domain(u.key, name);
  const [row] = await cp.database.db.select().from(domains).where(eq(domains.name, domain));
  const domainId = row!.id;
  return {
    cp,
    key: u.key,
    userId: u.id,
    domain,
    domainId,
    url: (path = '') => `/domains/${domain}/records/${path}`,
    logCount: async () =>
      Number(
        rowsOf<{ n: string | number }>(
          await cp.database.db.execute(sql`SELECT count(*) AS n FROM config_log WHERE domain_id = ${domainId}`),
        )[0]!.n,
      ),
    setOverride: async (field, value) => {
      await setOverride(cp.database.db, domainId, field as never, value);
    },
    setState: async (state) => {
      await cp.database.db.update(domains).set({ state }).where(eq(domains.id, domainId));
    },
  };
}

/**
 * The one config-log entry appended after version `from` (asserted: exactly one, a delta), decoded, beside the domain's
 * whole snapshot as it is read back from the database now.
 */
export async function oneDeltaAndZone(
  f: RecordsFixture,
  from: number,
): Promise<{ sent: DomainSnapshot; stored: DomainSnapshot }> {
  const entries = await f.cp.app.configLog.readAfter(f.cp.app.db, from, 100_000);
  assert.equal(entries.length, 1, 'ONE config-log entry');
  assert.equal(entries[0]!.delta, true);
  const sent = decodeDomainSnapshot(entries[0]!.payload);
  const stored = await f.cp.database.db.transaction((tx) =>
    buildDomainSnapshot(tx, { id: f.domainId }, f.cp.config.nsSets),
  );
  return { sent, stored };
}

/** The domain's config_bytes as stored (kept by triggers) and as counted from its records and rules now. */
export async function configBytes(f: RecordsFixture): Promise<{ bytes: string; counted: string }> {
  return rowsOf<{ bytes: string; counted: string }>(
    await f.cp.database.db.execute(sql`SELECT config_bytes::text AS bytes, ((SELECT sum(dns_record_config_bytes(name,
      type, destination, scheme, host_header_mode, host_header)) FROM dns_records WHERE domain_id = d.id)
      + (SELECT coalesce(sum(rule_config_bytes(type, filters, fields)), 0) FROM rules WHERE domain_id = d.id))::text
      AS counted FROM domains d WHERE id = ${f.domainId}`),
  )[0]!;
}
