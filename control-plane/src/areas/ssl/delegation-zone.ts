// The ACME delegation zone (ACME_DELEGATION_ZONE) as a zone our DNS nodes serve: a domain row the platform owns (a user
// no API key belongs to), holding at each external domain's ssl_delegation label the canary TXT that
// ssl/delegation/check looks for and, while an order runs, the order's dns-01 TXTs (the user's `_acme-challenge` CNAME
// leads the CA there). Its records travel to the nodes through the config log like any zone's, written in the
// transaction of the change that causes them (a domain created, switched to or from external DNS, deleted).
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { dnsRecords, domains } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import type { ConfigLog } from '../../config-log/config-log.js';
import { changeDomain, type WriteTarget } from '../../config-log/change-domain.js';
import { deleteRecords, insertRecords } from '../records/store.js';
import { RECORD_DEFAULTS } from '../records/normalize.js';
import type { RecordFields } from '../records/types.js';

type DomainRow = typeof domains.$inferSelect;

/** The zone's owner: a user without keys (`.invalid` is reserved, RFC 2606), never active. */
export const ZONE_OWNER_EMAIL = 'acme-delegation@platform.invalid';
/** Marks canary records (a challenge TXT carries the ACME challenge comment instead). */
export const CANARY_COMMENT = 'ssl_delegation canary: kept by the platform';
/** TTL of every TXT in the zone: a challenge must be seen soon after it is published. */
export const DELEGATED_TTL = 60;

/** The label of a domain's ssl_delegation target inside `zone` (one label), or undefined when it lies elsewhere. */
export function delegationLabel(block: unknown, zone: string): string | undefined {
  const raw = (block as { target?: unknown } | null)?.target;
  if (typeof raw !== 'string') return undefined;
  const target = raw.toLowerCase().replace(/\.$/, '');
  if (!target.endsWith(`.${zone}`)) return undefined;
  const label = target.slice(0, -(zone.length + 1));
  return /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label) ? label : undefined;
}

function canaryOf(block: unknown): string | undefined {
  const c = (block as { canary?: unknown } | null)?.canary;
  return typeof c === 'string' && c.length > 0 && c.length <= 255 ? c : undefined;
}

/**
 * The zone's row, locked in `tx`, when the platform owns it; made first when `create` (with its owner). A row of that
 * name that a tenant holds is never written to: undefined.
 */
async function lockZone(
  tx: Tx,
  zone: string,
  create: boolean,
): Promise<{ row: DomainRow; created: boolean } | undefined> {
  let created = false;
  if (create) {
    await tx.execute(sql`
      INSERT INTO users (email, name, active) VALUES (${ZONE_OWNER_EMAIL}, 'ACME delegation zone', false)
      ON CONFLICT (email) DO NOTHING`);
    const res = await tx.execute(sql`
      INSERT INTO domains (name, owner_id, dns_mode, state, ns_set_index)
      SELECT ${zone}, id, 'managed', 'active', 0 FROM users WHERE email = ${ZONE_OWNER_EMAIL}
      ON CONFLICT (name) DO NOTHING RETURNING id`);
    created = rowsOf(res).length > 0;
  }
  const res = await tx.execute(sql`
    SELECT d.id FROM domains d JOIN users u ON u.id = d.owner_id
    WHERE d.name = ${zone} AND u.email = ${ZONE_OWNER_EMAIL} FOR UPDATE OF d`);
  const id = rowsOf<{ id: number }>(res)[0]?.id;
  if (id === undefined) return undefined;
  const [row] = await tx.select().from(domains).where(eq(domains.id, id));
  return row ? { row, created } : undefined;
}

/** Ids of the zone's records at `label` (all of them, or those of one comment and one of `values`). */
async function recordsAt(
  tx: Tx,
  zoneId: number,
  label: string,
  only?: { comment: string; values: readonly string[] },
): Promise<number[]> {
  const at = and(eq(dnsRecords.domainId, zoneId), eq(dnsRecords.name, label));
  const where = only
    ? and(
        at,
        eq(dnsRecords.type, 'TXT'),
        eq(dnsRecords.comment, only.comment),
        inArray(dnsRecords.destination, [...only.values]),
      )
    : at;
  if (only?.values.length === 0) return [];
  return (await tx.select({ id: dnsRecords.id }).from(dnsRecords).where(where)).map((r) => r.id);
}

const txt = (name: string, value: string, comment: string): RecordFields => ({
  ...RECORD_DEFAULTS,
  name,
  type: 'TXT',
  destination: value,
  ttl: DELEGATED_TTL,
  comment,
});

/**
 * Inside the transaction of a domain's change: its ssl_delegation went from `before` to `after` (created: null → block;
 * deleted: block → null; a DNS-mode switch). Everything at the old label goes, the new label gets its canary; one
 * config-log entry of the zone. The caller's own append and nudge follow (changeDomain).
 */
export async function moveDelegation(
  log: ConfigLog,
  tx: Tx,
  zone: string,
  before: unknown,
  after: unknown,
): Promise<void> {
  const old = delegationLabel(before, zone);
  const next = delegationLabel(after, zone);
  const canary = canaryOf(after);
  if (old === undefined && (next === undefined || canary === undefined)) return;
  const z = await lockZone(tx, zone, next !== undefined && canary !== undefined);
  if (!z) return;
  const removed = old === undefined ? [] : await deleteRecords(tx, z.row.id, await recordsAt(tx, z.row.id, old));
  const added =
    next !== undefined && canary !== undefined
      ? await insertRecords(tx, z.row.id, [txt(next, canary, CANARY_COMMENT)])
      : [];
  await log.appendChange(
    tx,
    z.row.id,
    z.created ? { whole: true } : { upsertedRecords: added.map((r) => r.id), removedRecords: removed },
  );
}

/**
 * Brings the zone in line with the domains (at start: domains made before the zone existed, a changed
 * ACME_DELEGATION_ZONE, records left by an order that never withdrew): a canary for every external domain's label,
 * nothing at labels no domain holds. Made when an external domain needs it; one config-log entry.
 */
export async function reconcileDelegationZone(
  target: WriteTarget,
  zone: string,
): Promise<{ added: number; removed: number }> {
  const res = await target.db.execute(
    sql`SELECT ssl_delegation FROM domains WHERE dns_mode = 'external' AND ssl_delegation IS NOT NULL`,
  );
  const wanted = new Map<string, string>();
  for (const r of rowsOf<{ ssl_delegation: unknown }>(res)) {
    const block = typeof r.ssl_delegation === 'string' ? JSON.parse(r.ssl_delegation) : r.ssl_delegation;
    const label = delegationLabel(block, zone);
    const canary = canaryOf(block);
    if (label !== undefined && canary !== undefined) wanted.set(label, canary);
  }
  const outcome = await target.db.transaction(async (tx) => {
    const z = await lockZone(tx, zone, wanted.size > 0);
    if (!z) return { added: 0, removed: 0 };
    const have = rowsOf<{ id: number; name: string; destination: string; comment: string | null }>(
      await tx.execute(sql`SELECT id, name, destination, comment FROM dns_records WHERE domain_id = ${z.row.id}`),
    );
    const canaries = new Set<string>();
    const stale: number[] = [];
    for (const r of have) {
      const canary = wanted.get(r.name);
      if (canary === undefined) stale.push(Number(r.id));
      else if (r.comment === CANARY_COMMENT) {
        if (r.destination === canary && !canaries.has(r.name)) canaries.add(r.name);
        else stale.push(Number(r.id));
      }
    }
    const missing = [...wanted].filter(([label]) => !canaries.has(label));
    const removed = await deleteRecords(tx, z.row.id, stale);
    const added = await insertRecords(
      tx,
      z.row.id,
      missing.map(([label, canary]) => txt(label, canary, CANARY_COMMENT)),
    );
    if (z.created || removed.length > 0 || added.length > 0)
      await target.configLog.appendChange(
        tx,
        z.row.id,
        z.created ? { whole: true } : { upsertedRecords: added.map((r) => r.id), removedRecords: removed },
      );
    return { added: added.length, removed: removed.length };
  });
  if (outcome.added + outcome.removed > 0) target.configLog.nudge();
  return outcome;
}

/** Challenge TXT values at one label of the zone, marked by `comment`. */
export interface DelegatedTxts {
  zone: string;
  label: string;
  values: readonly string[];
  comment: string;
}

/** Publishes challenge TXT values at a domain's label (values already there are kept); one config-log entry. */
export async function publishDelegated(target: WriteTarget, at: DelegatedTxts): Promise<number> {
  const { zone, label, values, comment } = at;
  let created = false;
  return changeDomain(
    target,
    {
      async lock(tx) {
        const z = await lockZone(tx, zone, true);
        if (!z)
          throw new ApiError(
            'CP_ERR_WRONG_STATE',
            `the ACME delegation zone ${zone} is held by a tenant: nothing is published there`,
          );
        created = z.created;
        return z.row;
      },
    },
    async (tx, z) => {
      const present = new Set(
        rowsOf<{ destination: string }>(
          await tx.execute(
            sql`SELECT destination FROM dns_records WHERE domain_id = ${z.id} AND name = ${label} AND type = 'TXT'`,
          ),
        ).map((r) => r.destination),
      );
      const missing = [...new Set(values)].filter((v) => !present.has(v));
      const rows = await insertRecords(
        tx,
        z.id,
        missing.map((v) => txt(label, v, comment)),
      );
      return {
        value: rows.length,
        change: created ? { whole: true } : { upsertedRecords: rows.map((r) => r.id) },
      };
    },
  );
}

/** Withdraws challenge TXT values published at a label (records of `comment` only: never the canary). */
export async function withdrawDelegated(target: WriteTarget, at: DelegatedTxts): Promise<number> {
  const { zone, label, values, comment } = at;
  const absent = new ApiError('CP_ERR_NOT_FOUND', `the ACME delegation zone ${zone} does not exist`);
  return changeDomain(
    target,
    {
      async lock(tx) {
        const z = await lockZone(tx, zone, false);
        if (!z) throw absent;
        return z.row;
      },
    },
    async (tx, z) => {
      const removed = await deleteRecords(tx, z.id, await recordsAt(tx, z.id, label, { comment, values }));
      return { value: removed.length, change: { removedRecords: removed } };
    },
  ).catch((err: unknown) => {
    if (err === absent) return 0;
    throw err;
  });
}
