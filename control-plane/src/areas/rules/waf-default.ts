// The WAF's default protection: a waf rule created with every domain (createDomain), its status (GET) and its
// restoration (POST). The rule is found by the read-only mark in its fields, so edits keep it identifiable: status
// says `modified`, and restore puts its defaults back (or creates it again when it was deleted). The domain's own waf
// rules are never touched.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { and, asc, eq, sql } from 'drizzle-orm';
import { isDeepStrictEqual } from 'node:util';
import { WAF_DEFAULT_BODY, WAF_DEFAULT_MARK } from '@platform/shared/match';
import type { Tx } from '../../db/index.js';
import { rules, type domains } from '../../db/schema.js';
import { loadDomain } from '../../auth/domain-access.js';
import { changeDomain } from '../../config-log/index.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { errorResponses, Nullable, StringEnum } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import { validate } from './service.js';

type DomainRow = typeof domains.$inferSelect;
type RuleRow = typeof rules.$inferSelect;

/** The default rule as stored: common fields (filters), its own fields with the mark, enabled and priority. */
function defaultRule(): {
  enabled: boolean;
  priority: number;
  filters: Record<string, unknown>;
  fields: Record<string, unknown>;
} {
  const r = validate('waf', { ...WAF_DEFAULT_BODY });
  const { enabled, priority, ...filters } = r.common;
  return { enabled, priority, filters, fields: { ...r.fields, [WAF_DEFAULT_MARK]: true } };
}

/** Inserts the default protection rule of a new domain (inside its creation transaction). */
export async function insertDefaultWafRule(tx: Tx, domainId: number): Promise<void> {
  await tx.insert(rules).values({ domainId, type: 'waf', ...defaultRule() });
}

async function findDefault(db: Tx | FastifyInstance['db'], domainId: number): Promise<RuleRow | undefined> {
  const [row] = await db
    .select()
    .from(rules)
    .where(
      and(eq(rules.domainId, domainId), eq(rules.type, 'waf'), sql`${rules.fields} ->> ${WAF_DEFAULT_MARK} = 'true'`),
    )
    .orderBy(asc(rules.id))
    .limit(1);
  return row;
}

export const WafDefaultStatus = Type.Object(
  {
    protected: Type.Boolean({
      description: 'The default protection rule exists, is enabled and enforces (dry_run logs only)',
    }),
    state: StringEnum(['default', 'modified', 'missing'], {
      description:
        'default: as created; modified: changed since (fields, scope, mode, priority or disabled); missing: deleted',
    }),
    rule_id: Nullable(Type.Integer({ description: 'The default protection rule (a waf rule of this domain)' })),
    paranoia_level: Nullable(Type.Integer({ minimum: 1, maximum: 4 })),
    action_mode: Nullable(StringEnum(['enforce', 'dry_run'])),
  },
  { title: 'WafDefaultProtection' },
);
type Status = {
  protected: boolean;
  state: 'default' | 'modified' | 'missing';
  rule_id: number | null;
  paranoia_level: number | null;
  action_mode: 'enforce' | 'dry_run' | null;
};

function statusOf(row: RuleRow | undefined): Status {
  if (!row) return { protected: false, state: 'missing', rule_id: null, paranoia_level: null, action_mode: null };
  const d = defaultRule();
  const same =
    row.enabled === d.enabled &&
    row.priority === d.priority &&
    isDeepStrictEqual(row.filters, d.filters) &&
    isDeepStrictEqual(row.fields, d.fields);
  const mode = (row.filters as { action_mode?: string }).action_mode === 'dry_run' ? 'dry_run' : 'enforce';
  return {
    protected: row.enabled && mode === 'enforce',
    state: same ? 'default' : 'modified',
    rule_id: row.id,
    paranoia_level: Number(row.fields.paranoia_level ?? 1),
    action_mode: mode,
  };
}

export async function wafDefaultStatus(app: FastifyInstance, domainId: number): Promise<Status> {
  return statusOf(await findDefault(app.db, domainId));
}

/** Resets the default rule to its defaults, or creates it again; one config-log entry. */
export async function restoreWafDefault(app: FastifyInstance, domain: DomainRow): Promise<Status> {
  const row = await changeDomain(app, domain.id, async (tx, locked) => {
    requireFeature(await effectiveFeatures(tx, locked.id), 'rules_enabled');
    const existing = await findDefault(tx, locked.id);
    const d = defaultRule();
    const [saved] = existing
      ? await tx
          .update(rules)
          .set({ ...d, updatedAt: new Date() })
          .where(eq(rules.id, existing.id))
          .returning()
      : await tx
          .insert(rules)
          .values({ domainId: locked.id, type: 'waf', ...d })
          .returning();
    return { value: saved, change: { upsertedRules: [saved.id] } };
  });
  return statusOf(row);
}

/** GET …/rules/waf/default-protection and POST …/rules/waf/default-protection/restore (static: beside `{ruleId}`). */
export function registerWafDefaultRoutes(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['rules'];
  app.get(
    '/domains/:domain/rules/waf/default-protection',
    {
      schema: {
        summary: 'Status of the WAF default protection',
        description:
          'Every domain gets a default waf rule (paranoia 1, threshold 5, enforced, zone-wide) when it is created, ' +
          'on every plan. This reports whether it is in place as created, changed since, or deleted.',
        tags,
        params: DomainParams,
        response: { 200: WafDefaultStatus, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return wafDefaultStatus(fastify, domain.id);
    },
  );
  app.post(
    '/domains/:domain/rules/waf/default-protection/restore',
    {
      schema: {
        summary: 'Restore the WAF default protection',
        description:
          'Puts the default waf rule back as created (enabled, enforced, paranoia 1, threshold 5, zone-wide, no ' +
          'exclusions), creating it again if it was deleted. Other waf rules are left as they are. Allowed on every ' +
          'plan, including those whose plan does not let them edit waf rules.',
        tags,
        params: DomainParams,
        response: { 200: WafDefaultStatus, ...errorResponses(403, 404, 409) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      return restoreWafDefault(fastify, domain);
    },
  );
}
