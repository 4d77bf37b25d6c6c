// The /internal API: how the workflows worker (and operators) change domain state in the database the control
// plane owns. Authenticated with the node token; API keys are refused (auth hook); hidden from the OpenAPI document.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ensureNodeToken } from '@platform/shared/node-token';
import { eq } from 'drizzle-orm';
import { domains } from '../db/schema.js';
import { ApiError, MESSAGES } from '../errors.js';
import { nodeTokenChecker } from '../auth/node-token.js';
import { parseDomainName } from '../areas/domains/domain-name.js';
import { StringEnum } from '../openapi/schemas.js';
import requestLogRoutes from './request-logs.js';
import cacheInventoryRoutes from '../areas/cache/inventory.js';
import acmeInternalRoutes from './acme.js';
import acmeHttp01Routes from './acme-http01.js';
import importSessionInternalRoutes from '../areas/import-sessions/internal.js';
import {
  applyDelegation,
  applyVerificationExpired,
  applyVerified,
  DOMAIN_STATES,
  expireDeveloperMode,
  importRecords,
  setState,
} from '../areas/domain-lifecycle/transitions.js';
import { rollDomainKeys } from '../areas/dnssec/service.js';

const Params = Type.Object({ domain: Type.String() });
const Observations = Type.Array(
  Type.Object({
    resolver: Type.String(),
    values: Type.Array(Type.String()),
    error: Type.Optional(Type.String()),
    cname: Type.Optional(Type.String()),
  }),
);

function domainName(raw: string): string {
  const parsed = parseDomainName(raw);
  if (!parsed.ok) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  return parsed.name;
}

export default async function internalRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const configured = (app.config as { nodeToken?: string }).nodeToken;
  const checkToken = nodeTokenChecker(ensureNodeToken(app.config.dataDir, configured));

  await app.register(async (scope) => {
    scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      const auth = request.headers.authorization ?? '';
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1];
      const header = request.headers['x-node-token'];
      const presented = bearer ?? (typeof header === 'string' ? header.trim() : undefined);
      if (checkToken(presented)) return;
      // A wrong token counts against the client address like a wrong API key (429 once over the budget).
      await app.limitRequest(request, reply);
      throw new ApiError('CP_ERR_INVALID_NODE_TOKEN', 'invalid node token');
    });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    const hide = { hide: true, params: Params } as const;

    // The lifecycle view of a domain, with the ssl_delegation canary that the ACME delegation zone serves at its target.
    r.get('/internal/domains/:domain', { schema: hide }, async (req) => {
      const [row] = await app.db
        .select()
        .from(domains)
        .where(eq(domains.name, domainName(req.params.domain)));
      if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
      return {
        name: row.name,
        dns_mode: row.dnsMode,
        state: row.state,
        verification_state: row.verificationState,
        ns_set_index: row.nsSetIndex,
        verification: row.verification,
        ssl_delegation: row.sslDelegation,
        developer_mode_until: row.developerModeUntil?.toISOString() ?? null,
      };
    });

    r.post(
      '/internal/domains/:domain/delegation',
      {
        schema: {
          ...hide,
          body: Type.Object({ observations: Observations, manual: Type.Boolean({ default: false }) }),
        },
      },
      async (req) => await applyDelegation(app, domainName(req.params.domain), req.body.observations, req.body.manual),
    );

    r.post(
      '/internal/domains/:domain/verified',
      {
        schema: { ...hide, body: Type.Object({ method: StringEnum(['cname', 'txt', 'ssl_delegation']) }) },
      },
      async (req) => applyVerified(app, domainName(req.params.domain), req.body.method),
    );

    r.post(
      '/internal/domains/:domain/verification-expired',
      {
        schema: { ...hide, body: Type.Object({ token: Type.String() }) },
      },
      async (req) => applyVerificationExpired(app, domainName(req.params.domain), req.body.token),
    );

    // One step of the DNSSEC key rollovers (workflows/ rollDnssecKeys): what is due is done, the next step's time.
    r.post('/internal/domains/:domain/dnssec/roll', { schema: hide }, async (req) =>
      rollDomainKeys(app, domainName(req.params.domain)),
    );

    r.post(
      '/internal/domains/:domain/developer-mode/expire',
      {
        schema: { ...hide, body: Type.Object({ expires_at_ms: Type.Number() }) },
      },
      async (req) => expireDeveloperMode(app, domainName(req.params.domain), req.body.expires_at_ms),
    );

    r.post(
      '/internal/domains/:domain/records/import',
      {
        schema: {
          ...hide,
          body: Type.Object({
            records: Type.Array(
              Type.Object({
                name: Type.String(),
                type: Type.String(),
                destination: Type.String(),
                ttl: Type.Optional(Type.Integer()),
                mx_priority: Type.Optional(Type.Integer()),
              }),
              { maxItems: 10_000 },
            ),
          }),
        },
      },
      async (req) => importRecords(app, domainName(req.params.domain), req.body.records),
    );

    // Operators: `curl -H "Authorization: Bearer $(cat data/node-token)" -d '{"state":"disabled"}' …/internal/domains/example.org/state`
    r.post(
      '/internal/domains/:domain/state',
      {
        schema: { ...hide, body: Type.Object({ state: StringEnum([...DOMAIN_STATES]) }) },
      },
      async (req) => {
        const name = domainName(req.params.domain);
        const result = await setState(app, name, req.body.state);
        return result;
      },
    );

    await scope.register(acmeInternalRoutes);
    await scope.register(acmeHttp01Routes);
    await scope.register(importSessionInternalRoutes);
  });

  await app.register(requestLogRoutes);
  await app.register(cacheInventoryRoutes);
}
