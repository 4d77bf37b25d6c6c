// DNSSEC of a managed zone (spec: the domain's DNSSEC setting; docs/decisions.md "DNSSEC: online signing"): GET the
// status, keys and the DS record to give the registrar; PUT to turn signing on or off.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { KEY_CHECKED_BY_WRITE, loadDomain, writeAs } from '../../auth/domain-access.js';
import { errorResponses } from '../../openapi/schemas.js';
import type { Tx } from '../../db/index.js';
import { DomainParams } from '../domains/schemas.js';
import { readDomainDnssec, setDnssec } from './service.js';

const DsRecord = Type.Object(
  {
    key_tag: Type.Integer(),
    algorithm: Type.Integer({ description: '13: ECDSA P-256 with SHA-256' }),
    digest_type: Type.Integer({ description: '2: SHA-256' }),
    digest: Type.String({ description: 'hex, upper case' }),
    record: Type.String({ description: 'the DS record in zone-file form' }),
  },
  { title: 'DsRecord' },
);

const DnssecKey = Type.Object(
  {
    key_tag: Type.Integer(),
    role: Type.Union([Type.Literal('ksk'), Type.Literal('zsk')]),
    state: Type.Union([Type.Literal('published'), Type.Literal('active'), Type.Literal('retired')]),
    algorithm: Type.Integer(),
    flags: Type.Integer({ description: '257 key-signing key, 256 zone-signing key' }),
    public_key: Type.String({ description: 'base64, as in the DNSKEY record' }),
    dnskey: Type.String({ description: 'the DNSKEY record in zone-file form' }),
    state_since: Type.String({ format: 'date-time' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'DnssecKey' },
);

export const DnssecStatus = Type.Object(
  {
    enabled: Type.Boolean(),
    status: Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('unavailable')], {
      description: 'unavailable: the zone is not served by the platform (dns_mode external)',
    }),
    algorithm: Type.String(),
    algorithm_number: Type.Integer(),
    denial: Type.Literal('nsec3', { description: 'NSEC3, SHA-1, no extra iterations, no salt, no opt-out' }),
    ds: Type.Array(DsRecord, {
      description:
        'What the parent zone (your registrar) should hold; during a key-signing key rollover both keys are listed. ' +
        'The zone also publishes CDS and CDNSKEY for registries that read them.',
    }),
    keys: Type.Array(DnssecKey),
  },
  { title: 'DnssecStatus' },
);

const DnssecUpdate = Type.Object(
  { enabled: Type.Boolean({ description: 'true signs the zone, false serves it unsigned and drops its keys' }) },
  { title: 'DnssecUpdate', additionalProperties: false },
);

export default async function dnssecRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];
  const path = '/domains/:domain/dnssec';

  app.get(
    path,
    {
      schema: {
        summary: 'DNSSEC: whether the zone is signed, its keys and the DS record for the registrar',
        tags,
        params: DomainParams,
        response: { 200: DnssecStatus, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return readDomainDnssec(app.db as unknown as Tx, domain);
    },
  );

  app.put(
    path,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Turn DNSSEC signing on or off',
        description:
          'On: a key-signing and a zone-signing key (ECDSA P-256) are made, the DNS nodes sign the zone, and the keys ' +
          'roll over on their own (zone-signing every 90 days, key-signing every year, announced through CDS). ' +
          'Give the registrar the DS record from `ds`. Off: remove the DS at the registrar first and wait for its ' +
          'TTL, or the domain stops resolving for validating resolvers; the keys are dropped. 400 for an external-DNS ' +
          'domain; 409 for a disabled or banned one.',
        tags,
        params: DomainParams,
        body: DnssecUpdate,
        response: { 200: DnssecStatus, ...errorResponses(400, 403, 404, 409, 415) },
      },
    },
    async (request) => setDnssec(app, writeAs(request, request.params.domain, 'domain.settings'), request.body.enabled),
  );
}
