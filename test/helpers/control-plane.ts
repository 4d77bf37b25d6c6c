// A control plane built in-process for one test: fresh database (PGlite or TEST_DATABASE_URL), app.inject(), helpers
// to create users, keys, domains and members. Closed with t.after (or close()).
import { openDatabase, type Database } from '../../control-plane/src/db/index.js';
import { build } from '../../control-plane/src/app.js';
import { loadConfig, type ControlPlaneConfig } from '../../control-plane/src/config.js';
import { createApiKey, type CreateKeyOptions } from '../../control-plane/src/auth/api-keys.js';
import { createUser } from '../../control-plane/src/admin/users.js';
import { domainMembers } from '../../control-plane/src/db/schema.js';
import type { MemberRole } from '../../control-plane/src/auth/permissions.js';
import type { TestDatabase } from './database.js';
import { createFastTestDatabase } from './fast-database.js';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

export interface TestControlPlane {
  app: FastifyInstance;
  database: Database;
  testDb: TestDatabase;
  config: Readonly<ControlPlaneConfig>;
  /** A new user with one full-access key (or as opts say). */
  user(email?: string, keyOpts?: CreateKeyOptions): Promise<{ id: number; email: string; key: string; keyId: number }>;
  key(userId: number, opts?: CreateKeyOptions): Promise<{ key: string; keyId: number }>;
  /** Inject with `Authorization: Bearer <key>`; a body object is sent as JSON. */
  call(
    key: string | null,
    method: InjectOptions['method'],
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** Creates a domain through the API as the given key and returns its name. */
  domain(key: string, name: string, dnsMode?: 'managed' | 'external'): Promise<string>;
  addMember(domainName: string, userId: number, role: MemberRole): Promise<void>;
  /** A second app on the same database with other settings (e.g. RATE_LIMIT_PER_MINUTE); closed with the first. */
  withEnv(env: Record<string, string>): Promise<FastifyInstance>;
  close(): Promise<void>;
}

let counter = 0;

export async function startTestControlPlane(
  t: { after(fn: () => Promise<void> | void): void } | null,
  env: Record<string, string> = {},
): Promise<TestControlPlane> {
  const testDb = await createFastTestDatabase(`cp${process.pid}`);
  // TEST_ANALYTICS_CLICKHOUSE_URL (set by clickhouse.test.ts): the analytics store on that ClickHouse, a database each.
  const chUrl = process.env.TEST_ANALYTICS_CLICKHOUSE_URL;
  if (chUrl)
    env = {
      ANALYTICS_BACKEND: 'clickhouse',
      ANALYTICS_CLICKHOUSE_URL: chUrl,
      ANALYTICS_CLICKHOUSE_DATABASE: `t${process.pid}_${++counter}`,
      ...env,
    };
  const config = loadConfig({ ...testDb.env, NODE_ENV: 'test', ...env });
  const database = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const app = await build({ config, database, logger: false });
  const db = database.db;
  let closed = false;
  const extraApps: FastifyInstance[] = [];
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const extra of extraApps) await extra.close();
    await app.close();
    await database.close();
    await testDb.drop();
  };
  t?.after(close);

  const call: TestControlPlane['call'] = (key, method, url, body, headers = {}) =>
    app.inject({
      method,
      url,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });

  const key: TestControlPlane['key'] = async (userId, opts) => {
    const created = await createApiKey(db, userId, opts);
    return { key: created.key, keyId: created.id };
  };

  return {
    app,
    database,
    testDb,
    config,
    call,
    key,
    close,
    async user(email, keyOpts) {
      const u = await createUser(db, email ?? `user${++counter}-${process.pid}@example.org`);
      const k = await key(u.id, keyOpts);
      return { ...u, ...k };
    },
    async domain(k, name, dnsMode = 'managed') {
      const res = await call(k, 'POST', '/domains/', { name, dns_mode: dnsMode });
      if (res.statusCode !== 200) throw new Error(`creating ${name} failed: ${res.statusCode} ${res.body}`);
      return res.json<{ name: string }>().name;
    },
    async withEnv(extraEnv) {
      const other = await build({
        config: loadConfig({ ...testDb.env, NODE_ENV: 'test', ...env, ...extraEnv }),
        database,
        logger: false,
      });
      extraApps.push(other);
      return other;
    },
    async addMember(domainName, userId, role) {
      const { domains } = await import('../../control-plane/src/db/schema.js');
      const { eq } = await import('drizzle-orm');
      const [d] = await db.select().from(domains).where(eq(domains.name, domainName));
      await db.insert(domainMembers).values({ domainId: d.id, userId, role });
    },
  };
}
