// Domain writes: create (with its free subscription), update settings, delete; each through the config log's write
// path (addDomain / changeDomain: one transaction, the domain row locked and read under the lock, one config-log
// entry, the workflows it needs recorded in the outbox there).
import { createHash, randomBytes } from 'node:crypto';
import { and, asc, eq, inArray, like, ne, or, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { Tx } from '../../db/index.js';
import { domains } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { addDomain, changeDomain, type DomainRow } from '../../config-log/index.js';
import { cancelSubscriptions, createFreeSubscription } from '../../plans/subscriptions.js';
import { effectiveFeatures } from '../../plans/entitlements.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import { CACHE_CAP_TIERS_MB } from './schemas.js';
import { moveDelegation } from '../ssl/delegation-zone.js';
import { insertDefaultWafRule } from '../rules/waf-default.js';
import { deleteDomainLogs } from '../analytics/service.js';
import { notifyDomain } from '../notifications/store.js';

type DnsMode = 'managed' | 'external';

export function isUniqueViolation(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23505') return true;
  }
  return false;
}

export function newVerification(name: string, tokenDays: number, now = new Date()) {
  return {
    type: 'TXT',
    name: `_platform-verification.${name}`,
    value: `platform-verification=${randomBytes(16).toString('hex')}`,
    expires_at: new Date(now.getTime() + tokenDays * 86_400_000).toISOString(),
  };
}

/** The CNAME an external domain publishes at _acme-challenge; the canary is the TXT value the delegation check looks for. */
export function newSslDelegation(name: string, acmeZone: string) {
  const label = createHash('sha256')
    .update(`${name}:${randomBytes(16).toString('hex')}`)
    .digest('hex')
    .slice(0, 32);
  return {
    type: 'CNAME',
    name: `_acme-challenge.${name}`,
    target: `${label}.${acmeZone}`,
    canary: randomBytes(16).toString('hex'),
  };
}

function initialState(mode: DnsMode) {
  return mode === 'managed'
    ? { state: 'pending', verificationState: null }
    : { state: 'unverified', verificationState: 'awaiting' };
}

/** Serialises domain creates, so the nesting check of one sees every other create (transaction-scoped). */
const DOMAIN_CREATE_LOCK_KEY = 727_010;

/**
 * 409 when `name` lies inside a zone of another account, or holds one (as Cloudflare, which refuses a subdomain zone
 * of a zone on another account): the parent's owner controls the delegation of every name below it. One account
 * may hold both a zone and zones inside it.
 */
async function refuseNestingAcrossAccounts(tx: Tx, ownerId: number, name: string): Promise<void> {
  const labels = name.split('.');
  const parents = labels.slice(1).map((_, i) => labels.slice(i + 1).join('.'));
  const below = `%.${name.replace(/[\\%_]/g, '\\$&')}`;
  const [other] = await tx
    .select({ name: domains.name })
    .from(domains)
    .where(and(ne(domains.ownerId, ownerId), or(inArray(domains.name, parents), like(domains.name, below))))
    .orderBy(asc(sql`length(${domains.name})`), asc(domains.name))
    .limit(1);
  if (!other) return;
  const relation = parents.includes(other.name) ? 'is inside' : 'contains';
  throw new ApiError(
    'CP_ERR_DOMAIN_EXISTS',
    `domain ${name} ${relation} ${other.name}, which belongs to another account`,
  );
}

export async function createDomain(
  app: FastifyInstance,
  ownerId: number,
  name: string,
  mode: DnsMode,
): Promise<DomainRow> {
  const conflict = () => new ApiError('CP_ERR_DOMAIN_EXISTS', `domain ${name} already exists`);
  const [existing] = await app.db.select({ id: domains.id }).from(domains).where(eq(domains.name, name)).limit(1);
  if (existing) throw conflict();
  try {
    const row = await addDomain(app, async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${DOMAIN_CREATE_LOCK_KEY})`);
      await refuseNestingAcrossAccounts(tx, ownerId, name);
      const [created] = await tx
        .insert(domains)
        .values({
          name,
          ownerId,
          dnsMode: mode,
          ...initialState(mode),
          verification: newVerification(name, app.config.verificationTokenDays),
          sslDelegation: mode === 'external' ? newSslDelegation(name, app.config.acmeDelegationZone) : null,
        })
        .returning();
      await createFreeSubscription(tx, created, ownerId);
      // The canary the delegation check looks for, served in the ACME delegation zone.
      await moveDelegation(app.configLog, tx, app.config.acmeDelegationZone, null, created.sslDelegation);
      // Default protection: the WAF's default rule, on every plan (rules/waf-default.ts).
      await insertDefaultWafRule(tx, created.id);
      // Delegation watch + zone scan, or verification watch: started by the dispatcher, never by this request.
      return { domain: created, workflows: app.temporal.starts.domainAdded(created) };
    });
    return (await app.db.select().from(domains).where(eq(domains.id, row.id)))[0] ?? row;
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict();
    throw err;
  }
}

export interface DomainChanges {
  dns_mode?: DnsMode;
  cache_l2_ttl_days?: number;
  cache_cap_mb?: number;
  origin_protocol?: string;
}

/** PUT: the body is merged onto the row read under the domain lock; fields equal to the stored ones change nothing. */
export async function updateDomain(app: FastifyInstance, domain: DomainRow, body: DomainChanges): Promise<DomainRow> {
  return changeDomain(app, domain.id, async (tx, current) => {
    const set: Partial<typeof domains.$inferInsert> = {};
    if (body.cache_cap_mb !== undefined && body.cache_cap_mb !== current.cacheCapMb) {
      if (!(CACHE_CAP_TIERS_MB as readonly number[]).includes(body.cache_cap_mb)) {
        throw new ApiError('CP_ERR_INVALID_INPUT', `cache_cap_mb must be one of: ${CACHE_CAP_TIERS_MB.join(', ')}`);
      }
      const features = await effectiveFeatures(tx, current.id);
      if (body.cache_cap_mb > features.max_cache_cap_mb) {
        throw new ApiError(
          'CP_ERR_PLAN_LIMIT',
          `cache_cap_mb ${body.cache_cap_mb} exceeds your plan's max_cache_cap_mb of ${features.max_cache_cap_mb}`,
          { feature: 'max_cache_cap_mb' },
        );
      }
      set.cacheCapMb = body.cache_cap_mb;
    }
    if (body.cache_l2_ttl_days !== undefined) set.cacheL2TtlDays = body.cache_l2_ttl_days;
    if (body.origin_protocol !== undefined) set.originProtocol = body.origin_protocol;
    if (body.dns_mode !== undefined && body.dns_mode !== current.dnsMode) {
      // Switching DNS mode restarts the proof of control: managed waits for delegation, external for verification.
      // It is the create transition of the new mode, never a way out of disabled or banned (409, nothing stored).
      assertNotFrozen(current);
      Object.assign(set, {
        dnsMode: body.dns_mode,
        ...initialState(body.dns_mode),
        nsSetIndex: null,
        verification: newVerification(current.name, app.config.verificationTokenDays),
        sslDelegation:
          body.dns_mode === 'external' ? newSslDelegation(current.name, app.config.acmeDelegationZone) : null,
      });
    }
    const changed = Object.entries(set).some(([k, v]) => (current as Record<string, unknown>)[k] !== v);
    if (!changed) return { value: current };
    set.updatedAt = new Date();
    const [updated] = await tx.update(domains).set(set).where(eq(domains.id, current.id)).returning();
    if (set.dnsMode !== undefined)
      await moveDelegation(
        app.configLog,
        tx,
        app.config.acmeDelegationZone,
        current.sslDelegation,
        updated!.sslDelegation,
      );
    // A dns_mode switch starts the proof of control over: the new mode's watches.
    const workflows = set.dnsMode !== undefined ? app.temporal.starts.domainAdded(updated!) : [];
    return { value: updated!, change: { domain: true }, workflows };
  });
}

/**
 * Removes the domain with what hangs off it (records, rules, members cascade) and tombstones its config; its
 * subscription is cancelled with cancel_reason domain_deleted and kept (billing history outlives the domain).
 */
export async function deleteDomain(app: FastifyInstance, domain: DomainRow): Promise<void> {
  await changeDomain(app, domain.id, async (tx, current) => {
    await cancelSubscriptions(tx, current.id, 'domain_deleted');
    // Before the delete: its members are still there to be told.
    await notifyDomain(tx, current.id, {
      category: 'domain',
      kind: 'domain.deleted',
      title: `${current.name} was deleted`,
      body: 'The domain, its records and rules were removed; its subscription was cancelled.',
      domain: current.name,
    });
    await moveDelegation(app.configLog, tx, app.config.acmeDelegationZone, current.sslDelegation, null);
    await tx.delete(domains).where(eq(domains.id, current.id));
    return { value: undefined, deleted: true };
  });
  // Its request logs go with it; should this fail, the analytics sweep drops the rows of domains that are gone.
  await deleteDomainLogs(app, domain.id).catch((err: unknown) =>
    app.log.warn({ err, domainId: domain.id }, 'dropping the request logs of a deleted domain failed'),
  );
}
