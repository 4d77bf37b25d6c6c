// Automatic attack protection (spec Domains "Further operations"): the domain's automatic attack switches (GET/PUT
// /domains/{domain}/attack-protection), the attacks detected on it (GET /domains/{domain}/attacks/), each with the
// rule that would stop it, and the two answers to one: enforce (the rule is created through the rules service, so
// every rule check and plan limit applies, in the same transaction that marks the attack enforced) or ignore.
// The switches stay in the control plane, which detects attacks from the request-log counters: the edge is never
// told about them (an automatic action reaches it as what it turns on: Under Attack Mode or a rule).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { and, desc, eq, isNull, ne, or } from 'drizzle-orm';
import { KEY_CHECKED_BY_WRITE, loadDomain, writeAs } from '../../auth/domain-access.js';
import { changeDomain, type DomainRow } from '../../config-log/index.js';
import type { Db, Tx } from '../../db/index.js';
import { attackProtection, attacks } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { errorResponses, Id, idSegment, Nullable, StringEnum } from '../../openapi/schemas.js';
import { effectiveFeatures, requireFeature, requireRuleType } from '../../plans/entitlements.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import { DomainParams } from '../domains/schemas.js';
import { createRule } from '../rules/service.js';

/** Bounds of the thresholds (inclusive). */
export const ATTACK_BOUNDS = {
  request_rate_multiplier: { minimum: 2, maximum: 100 },
  error_rate_percent: { minimum: 1, maximum: 100 },
  min_requests_per_minute: { minimum: 10, maximum: 10_000_000 },
} as const;
/** Client addresses listed with an attack. */
export const MAX_TOP_CLIENTS = 10;
export const ATTACK_NOT_FOUND = 'attack not found';

const SWITCHES = {
  auto_under_attack: Type.Boolean({
    description:
      'Turn Under Attack Mode on when the edge sees a request-rate or error anomaly (needs under_attack_allowed)',
  }),
  auto_rate_limit: Type.Boolean({
    description: "Enforce a detected attack's suggested rule at once (needs rules_enabled and the rate_limit type)",
  }),
  request_rate_multiplier: Type.Integer({
    ...ATTACK_BOUNDS.request_rate_multiplier,
    description: "A minute's requests above this many times the domain's usual rate are an anomaly",
  }),
  error_rate_percent: Type.Integer({
    ...ATTACK_BOUNDS.error_rate_percent,
    description: 'A minute in which at least this share of responses are errors (4xx/5xx) is an anomaly',
  }),
  min_requests_per_minute: Type.Integer({
    ...ATTACK_BOUNDS.min_requests_per_minute,
    description: 'Minutes with fewer requests are never an anomaly',
  }),
};

export const AttackProtection = Type.Object(SWITCHES, { title: 'AttackProtection' });
const AttackProtectionUpdate = Type.Partial(Type.Object(SWITCHES), {
  title: 'AttackProtectionUpdate',
  additionalProperties: false,
  description: 'Fields left out keep their values',
  examples: [{ auto_under_attack: true, request_rate_multiplier: 10, min_requests_per_minute: 600 }],
});
export type Switches = Static<typeof AttackProtection>;

export const DEFAULTS: Switches = {
  auto_under_attack: false,
  auto_rate_limit: false,
  request_rate_multiplier: 5,
  error_rate_percent: 50,
  min_requests_per_minute: 1000,
};

const ATTACK_STATUSES = ['detected', 'enforced', 'ignored'];
export const Attack = Type.Object(
  {
    id: Id(),
    kind: StringEnum(['request_rate', 'error_rate'], {
      description: 'request_rate: requests far above the usual rate; error_rate: a high share of error responses',
    }),
    host: Type.String({ description: 'The host name attacked ("" for the whole domain)' }),
    path: Type.String({ description: 'The path attacked ("" for every path)' }),
    started_at: Type.String({ format: 'date-time' }),
    ended_at: Nullable(Type.String({ format: 'date-time', description: 'null while the attack goes on' })),
    peak_requests_per_minute: Type.Integer({ minimum: 0 }),
    top_clients: Type.Array(
      Type.Object({ address: Type.String(), requests: Type.Integer({ minimum: 0 }) }, { title: 'AttackClient' }),
      { maxItems: MAX_TOP_CLIENTS, description: `The busiest client addresses, at most ${MAX_TOP_CLIENTS}` },
    ),
    rule_type: StringEnum(['rate_limit', 'drop'], { description: 'The type of the suggested rule' }),
    suggested_rule: Type.Object(
      {},
      {
        additionalProperties: true,
        description: 'The rule that would stop the attack: a create body of rule_type (POST /rules/{rule_type}/)',
      },
    ),
    status: StringEnum(ATTACK_STATUSES, {
      description: 'detected (no answer yet), enforced (its rule was created) or ignored',
    }),
    rule_id: Nullable(Id('The rule created by enforce; null if none or deleted since')),
    automatic_actions: Type.Array(
      Type.Object(
        {
          action: StringEnum(['under_attack', 'enforce'], {
            description:
              'under_attack: Under Attack Mode turned on (auto_under_attack); enforce: the rule (auto_rate_limit)',
          }),
          result: StringEnum(['done', 'skipped']),
          reason: Type.String({ description: 'Why it was skipped (the plan feature missing, …); "" when done' }),
        },
        { title: 'AttackAction' },
      ),
      { maxItems: 2, description: 'What the automatic switches did when the attack was detected' },
    ),
  },
  { title: 'Attack' },
);

const AttackParams = Type.Object({ domain: DomainParams.properties.domain, attackId: Id() });
const AttackListQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(ATTACK_STATUSES, { description: 'Only attacks with this status' })),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'Newest first, at most this many' }),
  },
  { additionalProperties: false },
);

export type AttackRow = typeof attacks.$inferSelect;

function presentAttack(row: AttackRow): Static<typeof Attack> {
  return {
    id: row.id,
    kind: row.kind,
    host: row.host,
    path: row.path,
    started_at: row.startedAt.toISOString(),
    ended_at: row.endedAt ? row.endedAt.toISOString() : null,
    peak_requests_per_minute: row.peakRequestsPerMinute,
    top_clients: row.topClients.slice(0, MAX_TOP_CLIENTS),
    rule_type: row.ruleType,
    suggested_rule: row.ruleBody,
    status: row.status,
    rule_id: row.ruleId,
    automatic_actions: row.automaticActions,
  };
}

export async function readSwitches(db: Db | Tx, domainId: number): Promise<Switches> {
  const [row] = await db.select().from(attackProtection).where(eq(attackProtection.domainId, domainId)).limit(1);
  if (!row) return { ...DEFAULTS };
  return {
    auto_under_attack: row.autoUnderAttack,
    auto_rate_limit: row.autoRateLimit,
    request_rate_multiplier: row.requestRateMultiplier,
    error_rate_percent: row.errorRatePercent,
    min_requests_per_minute: row.minRequestsPerMinute,
  };
}

async function findAttack(db: Db | Tx, domainId: number, id: number): Promise<AttackRow> {
  const [row] = await db
    .select()
    .from(attacks)
    .where(and(eq(attacks.id, id), eq(attacks.domainId, domainId)))
    .limit(1);
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', ATTACK_NOT_FOUND);
  return row;
}

/** An attack whose rule exists is enforced for good: the rule is lifted by deleting it, not by this API. */
function stillEnforced(row: AttackRow): boolean {
  return row.status === 'enforced' && row.ruleId !== null;
}
const notEnforced = or(ne(attacks.status, 'enforced'), isNull(attacks.ruleId));

export default async function attackRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];
  const switchesPath = '/domains/:domain/attack-protection';

  app.get(
    switchesPath,
    {
      schema: {
        summary: 'Automatic attack switches: what the platform turns on when it sees a request-rate or error anomaly',
        tags,
        params: DomainParams,
        response: { 200: AttackProtection, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return readSwitches(app.db, domain.id);
    },
  );

  app.put(
    switchesPath,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Change the automatic attack switches',
        description:
          'Turning auto_under_attack on needs the plan feature under_attack_allowed, auto_rate_limit on needs ' +
          'rules_enabled and the rate_limit rule type (403 naming the feature); turning either on for a disabled ' +
          'or banned domain is 409. Turning off and changing thresholds never are.',
        tags,
        params: DomainParams,
        body: AttackProtectionUpdate,
        response: { 200: AttackProtection, ...errorResponses(400, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      const body = request.body;
      return changeDomain(app, writeAs(request, request.params.domain, 'domain.settings'), async (tx, current) => {
        const before = await readSwitches(tx, current.id);
        const after: Switches = { ...before, ...body };
        const turnsOnUa = after.auto_under_attack && !before.auto_under_attack;
        const turnsOnRl = after.auto_rate_limit && !before.auto_rate_limit;
        if (turnsOnUa || turnsOnRl) {
          assertNotFrozen(current);
          const features = await effectiveFeatures(tx, current.id);
          if (turnsOnUa) requireFeature(features, 'under_attack_allowed');
          if (turnsOnRl) {
            requireFeature(features, 'rules_enabled');
            requireRuleType(features, 'rate_limit');
          }
        }
        const values = {
          autoUnderAttack: after.auto_under_attack,
          autoRateLimit: after.auto_rate_limit,
          requestRateMultiplier: after.request_rate_multiplier,
          errorRatePercent: after.error_rate_percent,
          minRequestsPerMinute: after.min_requests_per_minute,
          updatedAt: new Date(),
        };
        await tx
          .insert(attackProtection)
          .values({ domainId: current.id, ...values })
          .onConflictDoUpdate({ target: attackProtection.domainId, set: values });
        // Nothing the nodes serve changes: no config-log entry.
        return { value: after };
      });
    },
  );

  app.get(
    '/domains/:domain/attacks/',
    {
      schema: {
        summary: 'Detected attacks, newest first, each with the rule that would stop it',
        tags,
        params: DomainParams,
        querystring: AttackListQuery,
        response: { 200: Type.Array(Attack), ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const { status, limit } = request.query;
      const where = status
        ? and(eq(attacks.domainId, domain.id), eq(attacks.status, status as AttackRow['status']))
        : eq(attacks.domainId, domain.id);
      const rows = await app.db
        .select()
        .from(attacks)
        .where(where)
        .orderBy(desc(attacks.startedAt), desc(attacks.id))
        .limit(limit);
      return rows.map(presentAttack);
    },
  );

  app.post(
    `/domains/:domain/attacks/${idSegment('attackId')}/enforce`,
    {
      schema: {
        summary: 'Enforce an attack: create its suggested rule and mark the attack enforced',
        description:
          'The rule is created as POST /domains/{domain}/rules/{rule_type}/ would create it: its checks (400) and ' +
          'plan limits (403) apply. An ignored attack may still be enforced; one already enforced by a rule that ' +
          'still exists is 409.',
        tags,
        params: AttackParams,
        response: { 200: Attack, ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      return presentAttack(await enforceAttack(app, domain, request.params.attackId));
    },
  );

  app.post(
    `/domains/:domain/attacks/${idSegment('attackId')}/ignore`,
    {
      schema: {
        summary: 'Ignore an attack: no rule is created; it stays listed as ignored',
        description:
          'Ignoring an ignored attack changes nothing. An attack enforced by a rule that still exists is 409 (delete ' +
          'the rule to lift it).',
        tags,
        params: AttackParams,
        response: { 200: Attack, ...errorResponses(403, 404, 409) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'rules.edit');
      const id = request.params.attackId;
      const [row] = await app.db
        .update(attacks)
        .set({ status: 'ignored', ruleId: null, updatedAt: new Date() })
        .where(and(eq(attacks.id, id), eq(attacks.domainId, domain.id), notEnforced))
        .returning();
      if (row) return presentAttack(row);
      throw alreadyEnforced(await findAttack(app.db, domain.id, id));
    },
  );
}

/**
 * Creates the attack's suggested rule and marks it enforced, in the rule's transaction (POST …/enforce and the
 * detector's auto_rate_limit): every rule check (400) and plan limit (403) applies; 409 if already enforced.
 */
export async function enforceAttack(app: FastifyInstance, domain: DomainRow, id: number): Promise<AttackRow> {
  const attack = await findAttack(app.db, domain.id, id);
  if (stillEnforced(attack)) throw alreadyEnforced(attack);
  let marked: AttackRow | undefined;
  await createRule(app, domain, attack.ruleType, { ...attack.ruleBody }, async (tx, rule) => {
    [marked] = await tx
      .update(attacks)
      .set({ status: 'enforced', ruleId: rule.id, updatedAt: new Date() })
      .where(and(eq(attacks.id, id), eq(attacks.domainId, domain.id), notEnforced))
      .returning();
    // Enforced (or deleted) meanwhile: the rule is not kept either.
    if (!marked) {
      const now = await findAttack(tx, domain.id, id);
      throw alreadyEnforced(now);
    }
  });
  return marked!;
}

function alreadyEnforced(row: AttackRow): ApiError {
  return new ApiError('CP_ERR_CONFLICT', `attack ${row.id} is already enforced by rule ${row.ruleId}`, {
    rule_id: row.ruleId,
  });
}
