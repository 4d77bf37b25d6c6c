// Gateways (issue 16 item 4): switching one on creates its catalogue records through the records' own checks in one
// changeDomain write (one config-log entry); switching off removes the records it created; the terms of use are
// accepted once per account and version.
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { changeDomain, type DomainLock, type DomainRow } from '../../config-log/index.js';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { ApiError } from '../../errors.js';
import { originPolicy } from '../../origins/address-check.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import { planRecords } from '../records/service.js';
import { deleteRecords, insertRecords, listRecords } from '../records/store.js';
import { GATEWAYS, TERMS_TEXT, TERMS_VERSION, gatewayById, type Gateway } from './catalogue.js';

const iso = (d: Date | string | null | undefined): string | null => (d == null ? null : new Date(d).toISOString());

interface GatewayRow {
  gateway: string;
  name: string;
  record_ids: number[];
  enabled_at: Date | string;
  updated_at: Date | string;
}

export interface GatewayBody {
  id: string;
  title: string;
  description: string;
  icon_url: string;
  records: Array<{ name: string; type: string; destination: string; mx_priority?: number; ttl: number }>;
  enabled: boolean;
  name: string | null;
  record_ids: number[];
  enabled_at: string | null;
  updated_at: string | null;
}

function present(g: Gateway, zone: string, row: GatewayRow | undefined): GatewayBody {
  return {
    id: g.id,
    title: g.title,
    description: g.description,
    icon_url: `/gateways/${g.id}/icon`,
    records: g.records(zone).map((r) => ({
      name: r.name,
      type: r.type,
      destination: r.destination,
      ...(r.mx_priority !== undefined ? { mx_priority: r.mx_priority } : {}),
      ttl: r.ttl ?? 3600,
    })),
    enabled: row !== undefined,
    name: row?.name ?? null,
    record_ids: row?.record_ids ?? [],
    enabled_at: iso(row?.enabled_at),
    updated_at: iso(row?.updated_at),
  };
}

async function rowsOfDomain(db: Db | Tx, domainId: number): Promise<GatewayRow[]> {
  const res = await db.execute(
    sql`SELECT gateway, name, record_ids, enabled_at, updated_at FROM domain_gateways WHERE domain_id = ${domainId}`,
  );
  return rowsOf<GatewayRow>(res);
}

/** Every gateway of the catalogue with its state on the domain. */
export async function listGateways(db: Db, domain: DomainRow): Promise<GatewayBody[]> {
  const rows = await rowsOfDomain(db, domain.id);
  return GATEWAYS.map((g) =>
    present(
      g,
      domain.name,
      rows.find((r) => r.gateway === g.id),
    ),
  );
}

function known(id: string): Gateway {
  const g = gatewayById(id);
  if (!g) throw new ApiError('CP_ERR_NOT_FOUND', `gateway ${id} not found`);
  return g;
}

export interface TermsStatus {
  version: string;
  text: string;
  accepted: boolean;
  accepted_version: string | null;
  accepted_at: string | null;
}

export async function termsStatus(db: Db | Tx, userId: number): Promise<TermsStatus> {
  const res = await db.execute(
    sql`SELECT version, accepted_at FROM gateway_terms_acceptances WHERE user_id = ${userId}`,
  );
  const row = rowsOf<{ version: string; accepted_at: Date | string }>(res)[0];
  return {
    version: TERMS_VERSION,
    text: TERMS_TEXT,
    accepted: row?.version === TERMS_VERSION,
    accepted_version: row?.version ?? null,
    accepted_at: iso(row?.accepted_at),
  };
}

export async function acceptTerms(db: Db, userId: number): Promise<TermsStatus> {
  await db.execute(sql`
    INSERT INTO gateway_terms_acceptances (user_id, version) VALUES (${userId}, ${TERMS_VERSION})
    ON CONFLICT (user_id) DO UPDATE SET version = EXCLUDED.version, accepted_at = now()
      WHERE gateway_terms_acceptances.version <> EXCLUDED.version`);
  return termsStatus(db, userId);
}

/** The gateway's display name: trimmed, 1–64 characters, no control characters. */
function displayName(raw: string): string {
  const name = raw.trim();
  // eslint-disable-next-line no-control-regex
  if (name === '' || name.length > 64 || /[\u0000-\u001f\u007f]/.test(name))
    throw new ApiError('CP_ERR_INVALID_INPUT', 'name must be 1 to 64 characters without control characters');
  return name;
}

/**
 * Switches `id` on: the plan's gateways_enabled, the caller's acceptance of the current terms, a domain neither
 * disabled nor banned, the gateway not on yet, no other SPF policy at the apex for a gateway that brings one, then
 * its records checked as creates (an identical record already in the zone is left alone and not owned; any other
 * refusal stores nothing: 400 with every problem) and created, one config-log entry.
 */
export async function switchOn(
  app: FastifyInstance,
  lock: DomainLock,
  userId: number,
  id: string,
  name: string | undefined,
): Promise<GatewayBody> {
  const g = known(id);
  const label = displayName(name ?? g.title);
  return changeDomain(app, lock, async (tx, domain) => {
    assertNotFrozen(domain);
    requireFeature(await effectiveFeatures(tx, domain.id), 'gateways_enabled');
    if (!(await termsStatus(tx, userId)).accepted)
      throw new ApiError(
        'CP_ERR_TERMS_NOT_ACCEPTED',
        `accept the gateways' terms of use (version ${TERMS_VERSION}) first: POST /gateways/terms/accept`,
      );
    if ((await rowsOfDomain(tx, domain.id)).some((r) => r.gateway === g.id))
      throw new ApiError('CP_ERR_CONFLICT', `gateway ${g.id} is already on`);
    const inputs = g.records(domain.name);
    if (g.spf) {
      const own = inputs.find((r) => r.type === 'TXT')!.destination;
      const other = (await listRecords(tx, domain.id, ['@'])).find(
        (r) => r.type === 'TXT' && /^"?v=spf1(\s|"|$)/i.test(r.destination) && r.destination.replace(/"/g, '') !== own,
      );
      if (other)
        throw new ApiError(
          'CP_ERR_RECORD_CONFLICT',
          `the zone already has an SPF policy at ${domain.name} (record ${other.id}); a name may hold only one ` +
            '(RFC 7208): merge the include into it, or delete it, then switch the gateway on',
        );
    }
    const plan = await planRecords(
      tx,
      domain,
      inputs.map((input, i) => ({ line: i + 1, input })),
      originPolicy(app.config),
    );
    if (plan.errors.length)
      throw new ApiError(
        'CP_ERR_RECORD_CONFLICT',
        `gateway ${g.id} cannot be switched on: ${plan.errors.map((e) => `record ${e.line}: ${e.error}`).join('; ')}`,
        { errors: plan.errors },
      );
    if (plan.limitError) throw new ApiError('CP_ERR_PLAN_LIMIT', plan.limitError, { feature: 'max_records' });
    const created = plan.records.length ? await insertRecords(tx, domain.id, plan.records) : [];
    const ids = created.map((r) => r.id);
    const res = await tx.execute(sql`
      INSERT INTO domain_gateways (domain_id, gateway, name, record_ids)
      VALUES (${domain.id}, ${g.id}, ${label}, ${`{${ids.join(',')}}`}::int[])
      RETURNING gateway, name, record_ids, enabled_at, updated_at`);
    return {
      value: present(g, domain.name, rowsOf<GatewayRow>(res)[0]),
      change: { upsertedRecords: ids },
    };
  });
}

/** Renames a gateway that is on (its display name only; its records stay). */
export async function renameGateway(
  app: FastifyInstance,
  lock: DomainLock,
  id: string,
  name: string,
): Promise<GatewayBody> {
  const g = known(id);
  const label = displayName(name);
  return changeDomain(app, lock, async (tx, domain) => {
    const res = await tx.execute(sql`
      UPDATE domain_gateways SET name = ${label}, updated_at = now()
      WHERE domain_id = ${domain.id} AND gateway = ${g.id}
      RETURNING gateway, name, record_ids, enabled_at, updated_at`);
    const row = rowsOf<GatewayRow>(res)[0];
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', `gateway ${g.id} is not on`);
    return { value: present(g, domain.name, row) };
  });
}

/**
 * Switches `id` off: removes the records switching on created (those still there: a record the user deleted is
 * gone already, one they edited is removed too) in one config-log entry. Allowed on any plan and state, so a domain
 * that lost the feature can still take its records away.
 */
export async function switchOff(app: FastifyInstance, lock: DomainLock, id: string): Promise<GatewayBody> {
  const g = known(id);
  return changeDomain(app, lock, async (tx, domain) => {
    const res = await tx.execute(
      sql`DELETE FROM domain_gateways WHERE domain_id = ${domain.id} AND gateway = ${g.id} RETURNING record_ids`,
    );
    const row = rowsOf<{ record_ids: number[] }>(res)[0];
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', `gateway ${g.id} is not on`);
    const removed = await deleteRecords(tx, domain.id, row.record_ids);
    return { value: present(g, domain.name, undefined), change: { removedRecords: removed } };
  });
}

/** The gateway's icon (SVG), or a 404 for an id outside the catalogue. */
export function gatewayIcon(id: string): string {
  return known(id).icon;
}
