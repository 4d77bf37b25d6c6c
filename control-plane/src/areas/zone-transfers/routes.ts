// Zone transfers out (issue 17 item 4; docs/decisions.md "Zone transfers out"): GET the domain's secondaries and TSIG
// keys, PUT to replace them. The DNS nodes allow AXFR/IXFR from these addresses only (TSIG when a key is named) and
// send them NOTIFY on every change.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { KEY_CHECKED_BY_WRITE, loadDomain, writeAs } from '../../auth/domain-access.js';
import type { Tx } from '../../db/index.js';
import { errorResponses } from '../../openapi/schemas.js';
import { originPolicy } from '../../origins/address-check.js';
import { DomainParams } from '../domains/schemas.js';
import { MAX_SECONDARIES, MAX_TSIG_KEYS, present, setTransfers } from './service.js';
import { readTransfers } from './store.js';

const Secondary = Type.Object(
  {
    address: Type.String({ maxLength: 64, description: 'IPv4 or IPv6 address of the secondary' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'where NOTIFY is sent (53)' })),
    tsig_key: Type.Optional(
      Type.Union([Type.String({ maxLength: 253 }), Type.Null()], {
        description: 'name of a key in tsig_keys the secondary must sign with; null: none',
      }),
    ),
  },
  { additionalProperties: false },
);

const TsigKeyInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253 }),
    algorithm: Type.Optional(Type.Literal('hmac-sha256')),
    secret: Type.Optional(
      Type.String({
        maxLength: 128,
        description: 'base64, 16 to 64 bytes; omitted: kept for a key that exists, generated for a new one',
      }),
    ),
  },
  { additionalProperties: false },
);

const ZoneTransfersUpdate = Type.Object(
  {
    secondaries: Type.Array(Secondary, { maxItems: MAX_SECONDARIES }),
    tsig_keys: Type.Array(TsigKeyInput, { maxItems: MAX_TSIG_KEYS }),
  },
  { title: 'ZoneTransfersUpdate', additionalProperties: false },
);

const ZoneTransfers = Type.Object(
  {
    secondaries: Type.Array(
      Type.Object({ address: Type.String(), port: Type.Integer(), tsig_key: Type.Union([Type.String(), Type.Null()]) }),
    ),
    tsig_keys: Type.Array(Type.Object({ name: Type.String(), algorithm: Type.String() })),
  },
  { title: 'ZoneTransfers' },
);

const ZoneTransfersWritten = Type.Object(
  {
    ...ZoneTransfers.properties,
    generated_secrets: Type.Record(Type.String(), Type.String(), {
      description: 'secrets made for keys given without one, by key name (base64); shown only here',
    }),
  },
  { title: 'ZoneTransfersWritten' },
);

export default async function zoneTransferRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];
  const path = '/domains/:domain/zone-transfers';

  app.get(
    path,
    {
      schema: {
        summary: 'Zone transfers: the secondaries that may transfer the zone and their TSIG keys (no secrets)',
        tags,
        params: DomainParams,
        response: { 200: ZoneTransfers, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return present(await readTransfers(app.db as unknown as Tx, domain.id));
    },
  );

  app.put(
    path,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Replace the secondaries and TSIG keys of the zone',
        description:
          `At most ${MAX_SECONDARIES} secondaries (IP addresses; internal networks and the platform's own ` +
          `addresses are refused) and ${MAX_TSIG_KEYS} TSIG keys (hmac-sha256). The DNS nodes answer AXFR and IXFR ` +
          'over TCP from these addresses only, signed with the named key when there is one, and send NOTIFY to ' +
          'address:port on every change. 400 for an external-DNS domain.',
        tags,
        params: DomainParams,
        body: ZoneTransfersUpdate,
        response: { 200: ZoneTransfersWritten, ...errorResponses(400, 403, 404, 409, 415) },
      },
    },
    async (request) =>
      setTransfers(
        app,
        writeAs(request, request.params.domain, 'domain.settings'),
        request.body,
        originPolicy(app.config),
      ),
  );
}
