// /internal routes of ACME issuance, called by the workflows worker (node token; registered inside the token-checked
// scope of routes.ts): the environment's ACME account key, and the dns-01 challenge TXT records of managed domains,
// published in the domain's own zone through changeDomain (one config-log entry each way) and withdrawn after.
import { generateKeyPairSync } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { dnsRecords, domains } from '../db/schema.js';
import { StringEnum } from '../openapi/schemas.js';
import { storeIssuedCertificate } from '../areas/ssl/service.js';
import { acmePlan, recordAttempt, scheduleCertificateSweep } from './acme-plan.js';
import { rowsOf } from '../db/migrate.js';
import { ApiError, MESSAGES } from '../errors.js';
import { changeDomain } from '../config-log/change-domain.js';
import { parseDomainName } from '../areas/domains/domain-name.js';
import { insertRecords, deleteRecords } from '../areas/records/store.js';
import { RECORD_DEFAULTS } from '../areas/records/normalize.js';
import { getAcmeDnsAccount } from '../areas/ssl/acme-dns-store.js';
import { acmeDnsUpdate } from '../areas/ssl/acme-dns-client.js';
import { acmeDnsAad } from '../areas/ssl/acme-dns-routes.js';
import {
  delegationLabel,
  publishDelegated,
  reconcileDelegationZone,
  withdrawDelegated,
} from '../areas/ssl/delegation-zone.js';
import { originPolicy } from '../origins/address-check.js';
import type { PublishedChallenges } from '../../../workflows/src/types.js';

type DomainRow = typeof domains.$inferSelect;
/** acme-dns keeps this many TXT values per subdomain (the newest). */
const ACME_DNS_VALUES = 2;

/** Marks the TXT records this module writes: withdrawal never touches a record the user made. */
export const ACME_CHALLENGE_COMMENT = 'ACME dns-01 challenge: published and withdrawn by the platform';
/** At most this many challenge records per call (an order of 100 names has at most 100 authorizations). */
const MAX_CHALLENGES = 100;
/** A dns-01 value is the base64url SHA-256 of the key authorization: 43 characters. */
const CHALLENGE_VALUE = '^[A-Za-z0-9_-]{43}$';
const CHALLENGE_TTL = 60;

const Params = Type.Object({ domain: Type.String({ maxLength: 300 }) });
const Challenges = Type.Object({
  records: Type.Array(
    Type.Object({
      /** The fully qualified `_acme-challenge.<name>` inside the domain. */
      name: Type.String({ maxLength: 300 }),
      value: Type.String({ pattern: CHALLENGE_VALUE }),
    }),
    { minItems: 1, maxItems: MAX_CHALLENGES },
  ),
});

function domainName(raw: string): string {
  const parsed = parseDomainName(raw);
  if (!parsed.ok) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  return parsed.name;
}

/** `_acme-challenge.www.example.org` in `example.org` → `_acme-challenge.www`; 400 outside the domain. */
export function challengeOwner(fqdn: string, domain: string): string {
  const name = fqdn.toLowerCase().replace(/\.$/, '');
  const inside = name === `_acme-challenge.${domain}` || name.endsWith(`.${domain}`);
  if (!name.startsWith('_acme-challenge.') || !inside)
    throw new ApiError('CP_ERR_INVALID_INPUT', `"${fqdn}" is not an _acme-challenge name inside ${domain}`);
  return name.slice(0, -(domain.length + 1));
}

/** A new ACME account key (ECDSA P-256, PKCS#8 PEM), as acme-client takes it. */
function newAccountKey(): string {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;
}

export default async function acmeInternalRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  scheduleCertificateSweep(fastify);
  // The delegation zone holds a canary for every external domain (those made before it existed included).
  fastify.addHook('onReady', async () => {
    try {
      const done = await reconcileDelegationZone(fastify, fastify.config.acmeDelegationZone);
      if (done.added + done.removed > 0) fastify.log.info(done, 'ACME delegation zone reconciled');
    } catch (err) {
      fastify.log.error({ err }, 'ACME delegation zone could not be reconciled');
    }
  });

  // The account key of one ACME directory, made on first use (sealed at rest); concurrent first calls agree on one key.
  app.post(
    '/internal/acme/account',
    { schema: { hide: true, body: Type.Object({ directory_url: Type.String({ minLength: 1, maxLength: 2048 }) }) } },
    async (req) => {
      const url = req.body.directory_url;
      const vault = app.configLog.vault;
      if (!vault) throw new ApiError('CP_ERR_INTERNAL', 'no key vault to keep the ACME account key');
      const binding = `acme-account:${url}`;
      const res = await app.db.execute(sql`
        WITH ins AS (
          INSERT INTO acme_accounts (directory_url, account_key_sealed) VALUES (${url}, ${vault.seal(newAccountKey(), binding)})
          ON CONFLICT (directory_url) DO NOTHING RETURNING account_key_sealed)
        SELECT account_key_sealed FROM ins
        UNION ALL SELECT account_key_sealed FROM acme_accounts WHERE directory_url = ${url}`);
      const row = rowsOf<{ account_key_sealed: string }>(res)[0];
      if (!row) throw new ApiError('CP_ERR_INTERNAL', 'the ACME account key could not be stored');
      return { directory_url: url, account_key_pem: vault.open(row.account_key_sealed, binding) };
    },
  );

  // What the domain's certificate must cover now, and the issued certificate it has (the workflow decides when).
  app.post('/internal/domains/:domain/acme/plan', { schema: { hide: true, params: Params } }, async (req) => {
    const [row] = await app.db
      .select()
      .from(domains)
      .where(eq(domains.name, domainName(req.params.domain)));
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
    return acmePlan(app, row);
  });

  // Where the domain's issuance stands, as the workflow reports it (GET ssl/ and the domain list read it).
  app.post(
    '/internal/domains/:domain/acme/attempt',
    {
      schema: {
        hide: true,
        params: Params,
        body: Type.Object({
          status: StringEnum(['pending', 'issued', 'failed']),
          hostnames: Type.Array(Type.String({ maxLength: 300 }), { maxItems: 1000 }),
          error: Type.Optional(Type.String({ maxLength: 4000 })),
          next_retry_at_ms: Type.Optional(Type.Number()),
        }),
      },
    },
    async (req) => {
      const [row] = await app.db
        .select({ id: domains.id, name: domains.name })
        .from(domains)
        .where(eq(domains.name, domainName(req.params.domain)));
      if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
      await recordAttempt(app.db, row, req.body);
      return { ok: true };
    },
  );

  // An issued certificate and its key (the key exists nowhere else): stored sealed and sent to the edge.
  app.post(
    '/internal/domains/:domain/acme/certificate',
    {
      schema: {
        hide: true,
        params: Params,
        body: Type.Object({
          certificate: Type.String({ minLength: 1, maxLength: 64 * 1024 }),
          private_key: Type.String({ minLength: 1, maxLength: 16 * 1024 }),
          hostnames: Type.Array(Type.String({ maxLength: 300 }), { minItems: 1, maxItems: 100 }),
        }),
      },
    },
    async (req) => {
      const stored = await storeIssuedCertificate(app, domainName(req.params.domain), {
        certPem: req.body.certificate,
        keyPem: req.body.private_key,
        hostnames: req.body.hostnames,
        issuer: app.config.acme.directoryUrl,
      });
      return { id: stored.id, not_after: stored.notAfter.toISOString() };
    },
  );

  // Publishes dns-01 TXT records: in the zone of a managed domain (records already there with the same value are
  // kept; one config-log entry); for an external domain at its label in the ACME delegation zone, or through its
  // acme-dns account. Answers where the TXTs can be seen (`watch`, on our DNS nodes or through public resolvers).
  app.post(
    '/internal/domains/:domain/acme/challenges',
    { schema: { hide: true, params: Params, body: Challenges } },
    async (req) => {
      const name = domainName(req.params.domain);
      const [row] = await app.db.select().from(domains).where(eq(domains.name, name));
      if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
      if (row.dnsMode === 'external') return publishExternal(fastify, row, req.body.records);
      const published = await changeDomain(app, { name }, async (tx, domain) => {
        if (domain.state === 'disabled' || domain.state === 'banned')
          throw new ApiError('CP_ERR_DOMAIN_DISABLED', `domain is ${domain.state}`);
        if (domain.dnsMode !== 'managed')
          throw new ApiError('CP_ERR_WRONG_STATE', 'the domain switched to external DNS during the order');
        const wanted = req.body.records.map((r) => ({ owner: challengeOwner(r.name, domain.name), value: r.value }));
        const owners = [...new Set(wanted.map((w) => w.owner))];
        const present = await tx
          .select({
            id: dnsRecords.id,
            name: dnsRecords.name,
            type: dnsRecords.type,
            destination: dnsRecords.destination,
          })
          .from(dnsRecords)
          .where(and(eq(dnsRecords.domainId, domain.id), inArray(dnsRecords.name, owners)));
        const cname = present.find((p) => p.type === 'CNAME');
        if (cname)
          throw new ApiError(
            'CP_ERR_RECORD_CONFLICT',
            `a CNAME at ${cname.name}.${domain.name} takes the name the challenge TXT needs`,
          );
        const have = new Set(present.filter((p) => p.type === 'TXT').map((p) => `${p.name} ${p.destination}`));
        const missing = wanted.filter((w, i) => {
          const k = `${w.owner} ${w.value}`;
          const first = wanted.findIndex((o) => `${o.owner} ${o.value}` === k) === i;
          return first && !have.has(k);
        });
        const rows = await insertRecords(
          tx,
          domain.id,
          missing.map((m) => ({
            ...RECORD_DEFAULTS,
            name: m.owner,
            type: 'TXT',
            destination: m.value,
            ttl: CHALLENGE_TTL,
            comment: ACME_CHALLENGE_COMMENT,
          })),
        );
        return { value: rows.length, change: { upsertedRecords: rows.map((r) => r.id) } };
      });
      const watch = req.body.records.map((r) => ({ name: r.name.toLowerCase().replace(/\.$/, ''), value: r.value }));
      return { published, watch, via: 'nodes' as const };
    },
  );

  // Withdraws the challenge records the platform published (never a record of the user's with the same text); for an
  // external domain, those at its label in the delegation zone (an acme-dns account has no removal: its two newest
  // values rotate out).
  app.post(
    '/internal/domains/:domain/acme/challenges/withdraw',
    { schema: { hide: true, params: Params, body: Challenges } },
    async (req) => {
      const name = domainName(req.params.domain);
      const [row] = await app.db.select().from(domains).where(eq(domains.name, name));
      if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
      if (row.dnsMode === 'external') {
        const zone = app.config.acmeDelegationZone;
        const label = delegationLabel(row.sslDelegation, zone);
        if (label === undefined) return { withdrawn: 0 };
        const values = [...new Set(req.body.records.map((r) => r.value))];
        return { withdrawn: await withdrawDelegated(app, { zone, label, values, comment: ACME_CHALLENGE_COMMENT }) };
      }
      return changeDomain(app, { name }, async (tx, domain) => {
        const wanted = new Set(req.body.records.map((r) => `${challengeOwner(r.name, domain.name)} ${r.value}`));
        const ours = await tx
          .select({ id: dnsRecords.id, name: dnsRecords.name, destination: dnsRecords.destination })
          .from(dnsRecords)
          .where(
            and(
              eq(dnsRecords.domainId, domain.id),
              eq(dnsRecords.type, 'TXT'),
              eq(dnsRecords.comment, ACME_CHALLENGE_COMMENT),
            ),
          );
        const ids = ours.filter((r) => wanted.has(`${r.name} ${r.destination}`)).map((r) => r.id);
        const removed = await deleteRecords(tx, domain.id, ids);
        return { value: { withdrawn: removed.length }, change: { removedRecords: removed } };
      });
    },
  );
}

/** The one name an external domain's challenges may use: `_acme-challenge.<domain>` (its apex and wildcard). */
function externalChallengeValues(domain: string, records: ReadonlyArray<{ name: string; value: string }>): string[] {
  const expected = `_acme-challenge.${domain}`;
  for (const r of records) {
    if (r.name.toLowerCase().replace(/\.$/, '') !== expected)
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `"${r.name}": an external domain's challenges are answered at ${expected} only (its ssl_delegation CNAME)`,
      );
  }
  return [...new Set(records.map((r) => r.value))];
}

/**
 * An external domain's challenges: through its acme-dns account when it has one (one /update per value; acme-dns
 * keeps the two newest, so at most two), else at its label in the ACME delegation zone our DNS nodes serve.
 */
async function publishExternal(
  app: FastifyInstance,
  domain: DomainRow,
  records: ReadonlyArray<{ name: string; value: string }>,
): Promise<PublishedChallenges> {
  if (domain.state === 'disabled' || domain.state === 'banned')
    throw new ApiError('CP_ERR_DOMAIN_DISABLED', `domain is ${domain.state}`);
  const values = externalChallengeValues(domain.name, records);
  const account = await getAcmeDnsAccount(app.db, domain.id);
  if (account) {
    if (values.length > ACME_DNS_VALUES)
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `acme-dns keeps ${ACME_DNS_VALUES} TXT values per account: an order may publish at most ${ACME_DNS_VALUES}`,
      );
    const vault = app.configLog.vault;
    if (!vault) throw new ApiError('CP_ERR_INTERNAL', 'no key vault to open the acme-dns password');
    const creds = {
      serverUrl: account.serverUrl,
      username: account.username,
      password: vault.open(account.passwordSealed, acmeDnsAad(domain.id)),
      subdomain: account.subdomain,
    };
    for (const v of values) {
      const r = await acmeDnsUpdate(originPolicy(app.config), creds, v);
      if (!r.ok) throw new ApiError('CP_ERR_CHECK_FAILED', `acme-dns /update failed: ${r.error}`);
    }
    const name = `_acme-challenge.${domain.name}`;
    return { published: values.length, watch: values.map((value) => ({ name, value })), via: 'resolvers' };
  }
  const zone = app.config.acmeDelegationZone;
  const label = delegationLabel(domain.sslDelegation, zone);
  if (label === undefined)
    throw new ApiError(
      'CP_ERR_WRONG_STATE',
      `the ssl_delegation CNAME target of ${domain.name} is not inside the ACME delegation zone ${zone}`,
    );
  const published = await publishDelegated(app, { zone, label, values, comment: ACME_CHALLENGE_COMMENT });
  const name = `${label}.${zone}`;
  return { published, watch: values.map((value) => ({ name, value })), via: 'nodes' };
}
