// Under Attack Mode (spec "Further operations" of Domains: GET and PUT Under Attack Mode): while on, the edge shows the
// challenge (edge-node/src/rules/README.md "Challenge") to every request of the domain that holds no clearance. The
// switch is a domain column written through changeDomain and carried to the nodes in the snapshot's settings.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { eq } from 'drizzle-orm';
import { KEY_CHECKED_BY_WRITE, loadDomain, writeAs } from '../../auth/domain-access.js';
import { changeDomain, type DomainRow, type DomainWrite } from '../../config-log/index.js';
import type { Tx } from '../../db/index.js';
import { attackProtection, domains } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../openapi/schemas.js';
import { effectiveFeatures } from '../../plans/entitlements.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import { DomainParams } from '../domains/schemas.js';

export const UnderAttackMode = Type.Object(
  {
    enabled: Type.Boolean({
      description:
        'While true the edge challenges every request of the domain (a proof-of-work page; a solved one lasts 30 minutes)',
    }),
  },
  { title: 'UnderAttackMode' },
);

const UnderAttackModeUpdate = Type.Object(
  { enabled: Type.Boolean({ description: 'true turns Under Attack Mode on, false off' }) },
  { title: 'UnderAttackModeUpdate', additionalProperties: false },
);

export default async function securityRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];
  const path = '/domains/:domain/under-attack';

  app.get(
    path,
    {
      schema: {
        summary: 'Under Attack Mode: whether the edge challenges every request of the domain',
        tags,
        params: DomainParams,
        response: { 200: UnderAttackMode, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return { enabled: domain.underAttack };
    },
  );

  app.put(
    path,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Turn Under Attack Mode on or off',
        description:
          'Turning it on needs the plan feature under_attack_allowed (403 naming it); turning it off never does. ' +
          'A disabled or banned domain is 409.',
        tags,
        params: DomainParams,
        body: UnderAttackModeUpdate,
        response: { 200: UnderAttackMode, ...errorResponses(400, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      const enabled = request.body.enabled;
      return changeDomain(app, writeAs(request, request.params.domain, 'domain.settings'), (tx, current) =>
        writeUnderAttack(tx, current, enabled, 'user'),
      );
    },
  );
}

/**
 * The switch written under the domain lock (inside changeDomain), by the PUT or by the attack detector
 * (detector.ts). Turning it on needs the plan feature and a domain neither disabled nor banned. The switches' row
 * remembers whether the detector turned it on: a write by the user takes the switch over (the detector will not
 * turn it off), and the detector only turns off what it turned on.
 */
export async function writeUnderAttack(
  tx: Tx,
  current: DomainRow,
  enabled: boolean,
  by: 'user' | 'detector',
): Promise<DomainWrite<{ enabled: boolean }>> {
  // The user's write and the detector's off clear the mark; the detector's on sets it unless the switch was on.
  const mark = by === 'user' || !enabled ? false : current.underAttack ? undefined : true;
  if (mark !== undefined)
    await tx
      .update(attackProtection)
      .set({ underAttackByDetector: mark })
      .where(eq(attackProtection.domainId, current.id));
  if (current.underAttack === enabled) return { value: { enabled } };
  if (enabled) {
    assertNotFrozen(current);
    const features = await effectiveFeatures(tx, current.id);
    if (!features.under_attack_allowed)
      throw new ApiError('CP_ERR_PLAN_LIMIT', 'your plan does not include Under Attack Mode (under_attack_allowed)', {
        feature: 'under_attack_allowed',
      });
  }
  await tx.update(domains).set({ underAttack: enabled, updatedAt: new Date() }).where(eq(domains.id, current.id));
  return { value: { enabled }, change: { domain: true } };
}
