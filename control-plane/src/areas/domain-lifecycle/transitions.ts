// State changes of the domain lifecycle, shared by the public routes and the /internal API the workflows call.
// Each runs through changeDomain (one transaction, the domain row locked and read under the lock); a change nodes
// must see is reported to it and becomes one config-log entry.
import { and, eq, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { changeDomain, type DomainRow } from '../../config-log/index.js';
import type { Tx } from '../../db/index.js';
import { dnsRecords, domainChecks, domains } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { effectiveFeatures } from '../../plans/entitlements.js';
import { buildRecord } from '../records/normalize.js';
import { ZoneIndex } from '../records/zone-index.js';
import type { RecordFields, StoredRecord } from '../records/types.js';
import { judgeDelegation, type Observation } from './ns-match.js';
import { notifyDomain } from '../notifications/store.js';

export type { DomainRow };

/** The change of a transition: a domain-level field nodes read (state, developer mode). */
const DOMAIN_CHANGED = { domain: true } as const;

export async function recordCheckResult(
  tx: Tx,
  domainId: number,
  kind: 'check-ns' | 'delegation',
  result: Record<string, unknown>,
): Promise<void> {
  // A result recorded without a manual check (background workflows) must not consume the per-domain slot: epoch.
  await tx
    .insert(domainChecks)
    .values({ domainId, kind, lastAt: new Date(0), result })
    .onConflictDoUpdate({ target: [domainChecks.domainId, domainChecks.kind], set: { result } });
}

/** A delegation seen by the resolvers: a managed domain awaiting nameservers becomes active on an exact match. */
export async function applyDelegation(
  app: FastifyInstance,
  name: string,
  observations: Observation[],
  manual: boolean,
) {
  const sets = app.config.nsSets;
  return changeDomain(app, { name }, async (tx, row) => {
    const judged = judgeDelegation(observations, sets);
    const awaiting = row.dnsMode === 'managed' && (row.state === 'pending' || (manual && row.state === 'moved'));
    let state = row.state;
    if (awaiting && judged.ok) {
      state = 'active';
      await tx
        .update(domains)
        .set({ state, nsSetIndex: judged.matchedSet, updatedAt: new Date() })
        .where(eq(domains.id, row.id));
      await notifyDomain(tx, row.id, {
        category: 'domain',
        kind: 'domain.activated',
        title: `${row.name} is active`,
        body: `Its nameservers point to ${judged.nameservers.join(', ')}: the zone is served and proxied records go through the edge.`,
        domain: row.name,
      });
    }
    const result = {
      ok: judged.ok,
      state,
      nameservers: judged.nameservers,
      expected: sets.map((s) => [...s]),
      matched_set: judged.matchedSet,
      ...(judged.error ? { error: judged.error } : {}),
      checked_at: new Date().toISOString(),
    };
    if (manual) await recordCheckResult(tx, row.id, 'check-ns', result);
    return { value: result, change: state !== row.state ? DOMAIN_CHANGED : undefined };
  });
}

export function tokenExpired(row: DomainRow, now = new Date()): boolean {
  const v = row.verification as { expires_at?: string } | null;
  return row.verificationState === 'failed' || (!!v?.expires_at && Date.parse(v.expires_at) <= now.getTime());
}

/** The domain is external, unverified and its verification has not failed. */
export function awaitingVerification(row: DomainRow): boolean {
  return row.dnsMode === 'external' && row.state === 'unverified' && row.verificationState !== 'failed';
}

/** The CNAME or TXT was found (or the ssl delegation check passed): an awaiting external domain becomes active. */
export async function applyVerified(app: FastifyInstance, name: string, method: string) {
  return changeDomain(app, { name }, async (tx, row) => {
    if (!awaitingVerification(row)) return { value: { state: row.state, verification_state: row.verificationState } };
    await tx
      .update(domains)
      .set({ state: 'active', verificationState: 'verified', updatedAt: new Date() })
      .where(eq(domains.id, row.id));
    await notifyDomain(tx, row.id, {
      category: 'domain',
      kind: 'domain.verified',
      title: `${row.name} is verified and active`,
      body: `Control of the domain was proven (${method}); proxied records now go through the edge.`,
      domain: row.name,
      data: { method },
    });
    await recordCheckResult(tx, row.id, 'delegation', { ok: true, method, checked_at: new Date().toISOString() });
    return { value: { state: 'active', verification_state: 'verified' }, change: DOMAIN_CHANGED };
  });
}

/** The token `token` expired before the domain was verified: verification becomes `failed` (verify/retry mints a new one). */
export async function applyVerificationExpired(app: FastifyInstance, name: string, token: string) {
  return changeDomain(app, { name }, async (tx, row) => {
    const v = row.verification as { value?: string } | null;
    if (awaitingVerification(row) && v?.value === token) {
      await tx
        .update(domains)
        .set({ verificationState: 'failed', updatedAt: new Date() })
        .where(eq(domains.id, row.id));
      await notifyDomain(tx, row.id, {
        category: 'domain',
        kind: 'domain.verification_failed',
        title: `Verification of ${row.name} failed`,
        body: 'The verification token expired before the record was found. Ask for a new one with verify/retry.',
        domain: row.name,
      });
      return { value: { state: row.state, verification_state: 'failed' } };
    }
    return { value: { state: row.state, verification_state: row.verificationState } };
  });
}

export function developerModeBody(until: Date | null, now = new Date()) {
  const on = until !== null && until.getTime() > now.getTime();
  return { enabled: on, expires_at: on ? until.toISOString() : null };
}

/** Developer mode on until `until` (its expiry workflow armed) or off now (its workflow stopped). */
export async function setDeveloperMode(app: FastifyInstance, name: string, until: Date | null) {
  return changeDomain(app, { name }, async (tx, row) => {
    if (!until && !row.developerModeUntil) return { value: developerModeBody(null) }; // already off
    await tx.update(domains).set({ developerModeUntil: until, updatedAt: new Date() }).where(eq(domains.id, row.id));
    const starts = app.temporal.starts;
    const workflow = until ? starts.armDeveloperMode(row.name, until.getTime()) : starts.stopDeveloperMode(row.name);
    return { value: developerModeBody(until), change: DOMAIN_CHANGED, workflows: [workflow] };
  });
}

/** The expiry timer fired for `expiresAtMs`: switch off unless developer mode was re-armed with a later expiry. */
export async function expireDeveloperMode(app: FastifyInstance, name: string, expiresAtMs: number) {
  return changeDomain(app, { name }, async (tx, row) => {
    const until = row.developerModeUntil;
    if (!until || until.getTime() > expiresAtMs) return { value: developerModeBody(until) };
    await tx.update(domains).set({ developerModeUntil: null, updatedAt: new Date() }).where(eq(domains.id, row.id));
    return { value: developerModeBody(null), change: DOMAIN_CHANGED };
  });
}

export interface ImportedRecord {
  name: string;
  type: string;
  destination: string;
  ttl?: number;
  mx_priority?: number;
}

/** Imports scanned records through the records rules (validation, CNAME exclusivity, duplicates, plan max_records). */
export async function importRecords(app: FastifyInstance, name: string, records: ImportedRecord[]) {
  return changeDomain(app, { name }, async (tx, row) => {
    const existing = await tx.select().from(dnsRecords).where(eq(dnsRecords.domainId, row.id));
    const index = new ZoneIndex(existing.map((r) => ({ ...r }) as unknown as StoredRecord));
    const { max_records: maxRecords } = await effectiveFeatures(tx, row.id);
    const imported: number[] = [];
    let skipped = 0;
    for (const input of records) {
      let rec: RecordFields;
      try {
        rec = buildRecord(
          row.name,
          {
            name: input.name,
            type: input.type,
            destination: input.destination,
            ttl: input.ttl,
            mx_priority: input.mx_priority,
          },
          { literalTxt: true },
        );
        index.check(rec);
      } catch {
        skipped++;
        continue;
      }
      if (typeof maxRecords === 'number' && index.size >= maxRecords) {
        skipped++;
        continue;
      }
      const [stored] = await tx
        .insert(dnsRecords)
        .values({ domainId: row.id, ...rec, comment: rec.comment ?? 'imported by zone scan' })
        .returning();
      index.add({ ...rec, id: stored.id });
      imported.push(stored.id);
    }
    return { value: { imported: imported.length, skipped }, change: { upsertedRecords: imported } };
  });
}

export const DOMAIN_STATES = ['pending', 'unverified', 'active', 'disabled', 'moved', 'banned'] as const;

/**
 * Disabled and banned domains leave their state only through the operator or POST /enable (spec state table):
 * a write that would change what they serve, or restart their proof of control, is 409 `domain is <state>`.
 */
const FROZEN_STATES = new Set<string>(['disabled', 'banned']);

export function assertNotFrozen(row: Pick<DomainRow, 'state'>): void {
  if (FROZEN_STATES.has(row.state)) throw new ApiError('CP_ERR_DOMAIN_DISABLED', `domain is ${row.state}`);
}

/** Operator transition (POST /internal/domains/{domain}/state): e.g. disable a domain, or mark it moved. */
export async function setState(app: FastifyInstance, name: string, state: (typeof DOMAIN_STATES)[number]) {
  return changeDomain(app, { name }, async (tx, row) => {
    if (row.state === state) return { value: { state } };
    await tx.update(domains).set({ state, updatedAt: new Date() }).where(eq(domains.id, row.id));
    await notifyDomain(tx, row.id, {
      category: 'domain',
      kind: `domain.${state}`,
      title: `${row.name} is now ${state}`,
      body: `The domain changed from ${row.state} to ${state}.`,
      domain: row.name,
      data: { from: row.state, to: state },
    });
    return { value: { state }, change: DOMAIN_CHANGED };
  });
}

/**
 * Claims the per-domain slot of a manual check: at most once per `intervalMs`. Returns 0 when claimed, else the
 * milliseconds until the next allowed call.
 */
export async function claimCheckSlot(
  app: FastifyInstance,
  domainId: number,
  kind: 'check-ns' | 'delegation',
  intervalMs: number,
): Promise<number> {
  const claimed = await app.db
    .insert(domainChecks)
    .values({ domainId, kind, lastAt: sql`now()` as unknown as Date })
    .onConflictDoUpdate({
      target: [domainChecks.domainId, domainChecks.kind],
      set: { lastAt: sql`now()` },
      setWhere: sql`${domainChecks.lastAt} <= now() - (${intervalMs}::bigint * interval '1 millisecond')`,
    })
    .returning({ lastAt: domainChecks.lastAt });
  if (claimed.length > 0) return 0;
  const [row] = await app.db
    .select({ lastAt: domainChecks.lastAt })
    .from(domainChecks)
    .where(and(eq(domainChecks.domainId, domainId), eq(domainChecks.kind, kind)));
  return Math.max(1000, (row?.lastAt.getTime() ?? Date.now()) + intervalMs - Date.now());
}

/** Gives the slot back when the check could not run at all (Temporal or the worker unavailable). */
export async function releaseCheckSlot(
  app: FastifyInstance,
  domainId: number,
  kind: 'check-ns' | 'delegation',
): Promise<void> {
  await app.db.delete(domainChecks).where(and(eq(domainChecks.domainId, domainId), eq(domainChecks.kind, kind)));
}
