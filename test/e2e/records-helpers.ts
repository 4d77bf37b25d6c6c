// Helpers shared by the records e2e tests: a control plane with one owner and one domain, and config-log counts.
import { eq, sql } from 'drizzle-orm';
import { domains } from '../../control-plane/src/db/schema.js';
import { rowsOf } from '../../control-plane/src/db/migrate.js';
import { setOverride } from '../../control-plane/src/plans/subscriptions.js';
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
