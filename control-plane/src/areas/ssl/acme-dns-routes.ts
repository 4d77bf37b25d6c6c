// The acme-dns account of a domain: GET, PUT, DELETE /domains/{domain}/ssl/acme-dns and POST ssl/acme-dns/test (the
// credential test: one real /update call to the account's acme-dns server). The password is sealed at rest like
// certificate keys and never returned; the server URL is judged by the SSRF policy where the test connects.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { isIP } from 'node:net';
import { loadDomain } from '../../auth/domain-access.js';
import { ApiError, MESSAGES } from '../../errors.js';
import { errorResponses, MessageBody, Nullable } from '../../openapi/schemas.js';
import { originPolicy } from '../../origins/address-check.js';
import { DomainParams } from '../domains/schemas.js';
import { ACME_DNS_LIMITS, acmeDnsUpdate, acmeDnsUrlProblem, testTxtValue } from './acme-dns-client.js';
import {
  claimAcmeDnsTest,
  deleteAcmeDnsAccount,
  getAcmeDnsAccount,
  putAcmeDnsAccount,
  recordAcmeDnsTest,
  type AcmeDnsAccountRow,
} from './acme-dns-store.js';
import type { KeyVault } from './key-vault.js';

/** One credential test per domain per this many milliseconds (each is an outbound request). */
export const ACME_DNS_TEST_INTERVAL_MS = 10_000;

const Timestamp = Type.String({ format: 'date-time' });

export const AcmeDnsAccountPut = Type.Object(
  {
    server_url: Type.String({
      minLength: 1,
      maxLength: ACME_DNS_LIMITS.serverUrlLength,
      description: 'Base URL of the acme-dns API (http:// or https://); /update is called under it',
    }),
    username: Type.String({
      minLength: 1,
      maxLength: ACME_DNS_LIMITS.usernameLength,
      pattern: '^[A-Za-z0-9._-]+$',
      description: 'The `username` acme-dns /register returned (sent as X-Api-User)',
    }),
    password: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: ACME_DNS_LIMITS.passwordLength,
        pattern: '^[\\x21-\\x7e]+$',
        description:
          'The `password` acme-dns /register returned (sent as X-Api-Key). Never returned; may be omitted to keep the ' +
          'stored one',
      }),
    ),
    subdomain: Type.String({
      minLength: 1,
      maxLength: ACME_DNS_LIMITS.subdomainLength,
      pattern: '^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$',
      description: 'The `subdomain` acme-dns /register returned',
    }),
    fulldomain: Type.Optional(
      Nullable(
        Type.String({
          maxLength: ACME_DNS_LIMITS.fulldomainLength,
          pattern: '^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z0-9-]{1,63}\\.?$',
          description: 'The `fulldomain` acme-dns /register returned: the target of the `_acme-challenge` CNAME',
        }),
      ),
    ),
  },
  { title: 'AcmeDnsAccountPut', additionalProperties: false },
);

export const AcmeDnsAccount = Type.Object(
  {
    server_url: Type.String(),
    username: Type.String(),
    subdomain: Type.String(),
    fulldomain: Nullable(Type.String()),
    password_set: Type.Boolean({ description: 'Always true: a password is stored (it is never returned)' }),
    updated_at: Timestamp,
    last_test_at: Nullable(Timestamp),
    last_test_ok: Nullable(Type.Boolean()),
    last_test_error: Nullable(Type.String()),
  },
  { title: 'AcmeDnsAccount' },
);

export const AcmeDnsTestResult = Type.Object(
  { ok: Type.Boolean(), message: Type.String() },
  { title: 'AcmeDnsTestResult' },
);

function present(a: AcmeDnsAccountRow): Static<typeof AcmeDnsAccount> {
  return {
    server_url: a.serverUrl,
    username: a.username,
    subdomain: a.subdomain,
    fulldomain: a.fulldomain,
    password_set: true,
    updated_at: a.updatedAt.toISOString(),
    last_test_at: a.lastTestAt?.toISOString() ?? null,
    last_test_ok: a.lastTestOk,
    last_test_error: a.lastTestError,
  };
}

/** Additional data bound into the sealed password: the domain (a row copied to another domain does not open). */
export const acmeDnsAad = (domainId: number) => `acme-dns:${domainId}`;
const aad = acmeDnsAad;

const noAccount = () => new ApiError('CP_ERR_NOT_FOUND', 'no acme-dns account is configured for this domain');

export default async function acmeDnsRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['ssl'];
  const base = '/domains/:domain/ssl/acme-dns';
  const vault = (): KeyVault => {
    if (!app.configLog.vault) throw new Error('the config log has no key vault (createConfigLog(config))');
    return app.configLog.vault;
  };

  app.get(
    base,
    {
      schema: {
        summary: "The domain's acme-dns account (the password is never returned)",
        tags,
        params: DomainParams,
        response: { 200: AcmeDnsAccount, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const account = await getAcmeDnsAccount(app.db, domain.id);
      if (!account) throw noAccount();
      return present(account);
    },
  );

  app.put(
    base,
    {
      schema: {
        summary: 'Set the acme-dns account: dns-01 challenges of an external-DNS domain are published through it',
        description:
          'The values acme-dns /register returned. The password is sealed at rest and never returned; omitted, the ' +
          'stored one is kept (400 when none is stored). 400: malformed body, a server_url that is not http(s) or ' +
          'names a refused address (loopback, private, link-local, … unless ALLOWED_PRIVATE_NETWORKS allows it); ' +
          '409: the domain is disabled or banned. Nothing is sent to the server: POST ssl/acme-dns/test does that.',
        tags,
        params: DomainParams,
        body: AcmeDnsAccountPut,
        response: { 200: AcmeDnsAccount, ...errorResponses(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      if (domain.state === 'disabled' || domain.state === 'banned')
        throw new ApiError('CP_ERR_DOMAIN_DISABLED', `domain is ${domain.state}`);
      const body = request.body;
      const serverUrl = body.server_url.trim();
      const urlProblem = acmeDnsUrlProblem(serverUrl);
      if (urlProblem) throw new ApiError('CP_ERR_INVALID_INPUT', urlProblem);
      const u = new URL(serverUrl);
      const host = u.hostname.replace(/^\[|\]$/g, '');
      const literal = /^(.+\.)?localhost\.?$/i.test(host) ? '127.0.0.1' : isIP(host) !== 0 ? host : undefined;
      if (literal) {
        const port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
        const refusal = originPolicy(app.config).refusal(literal, port);
        if (refusal)
          throw new ApiError(
            'CP_ERR_INVALID_INPUT',
            `server_url: ${host} is ${refusal.reason}: acme-dns servers must be public addresses ` +
              '(an operator may allow internal ranges with ALLOWED_PRIVATE_NETWORKS)',
          );
      }
      let passwordSealed: string;
      if (body.password !== undefined) passwordSealed = vault().seal(body.password, aad(domain.id));
      else {
        const current = await getAcmeDnsAccount(app.db, domain.id);
        if (!current)
          throw new ApiError('CP_ERR_INVALID_INPUT', 'password is required (no acme-dns account is stored)');
        passwordSealed = current.passwordSealed;
      }
      const row = await putAcmeDnsAccount(app.db, {
        domainId: domain.id,
        serverUrl,
        username: body.username,
        passwordSealed,
        subdomain: body.subdomain.toLowerCase(),
        fulldomain: body.fulldomain ? body.fulldomain.toLowerCase().replace(/\.$/, '') : null,
      });
      return present(row);
    },
  );

  app.delete(
    base,
    {
      schema: {
        summary: 'Delete the acme-dns account (challenges go through the _acme-challenge delegation again)',
        tags,
        params: DomainParams,
        response: { 200: MessageBody, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      if (!(await deleteAcmeDnsAccount(app.db, domain.id))) throw noAccount();
      return { message: 'acme-dns account deleted' };
    },
  );

  app.post(
    `${base}/test`,
    {
      schema: {
        summary: 'Test the stored acme-dns credentials with a real /update call',
        description:
          'Sets a random TXT value (43 characters, the shape of a dns-01 digest) on the account subdomain through ' +
          'acme-dns /update with X-Api-User and X-Api-Key. 200 when acme-dns accepts it; 422 with `error` when it ' +
          'refuses the credentials, answers otherwise, cannot be reached within 5 s, or its address is refused; ' +
          `404 no account; 409 domain disabled or banned; 429 more than one test per ${ACME_DNS_TEST_INTERVAL_MS / 1000} s.`,
        tags,
        params: DomainParams,
        response: { 200: AcmeDnsTestResult, ...errorResponses(403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      if (domain.state === 'disabled' || domain.state === 'banned')
        throw new ApiError('CP_ERR_DOMAIN_DISABLED', `domain is ${domain.state}`);
      const claim = await claimAcmeDnsTest(app.db, domain.id, ACME_DNS_TEST_INTERVAL_MS);
      if (!claim) throw noAccount();
      if ('waitMs' in claim) {
        const s = Math.ceil(claim.waitMs / 1000);
        reply.header('retry-after', String(s));
        throw new ApiError('CP_ERR_RATE_LIMITED', MESSAGES.rateLimited, { retry_after: s });
      }
      const a = claim.account;
      let password: string;
      try {
        password = vault().open(a.passwordSealed, aad(domain.id));
      } catch {
        throw new ApiError('CP_ERR_CHECK_FAILED', 'the stored password cannot be opened: PUT the account again', {
          ok: false,
        });
      }
      const result = await acmeDnsUpdate(
        originPolicy(app.config),
        { serverUrl: a.serverUrl, username: a.username, password, subdomain: a.subdomain },
        testTxtValue(),
      );
      await recordAcmeDnsTest(app.db, domain.id, a.passwordSealed, result.ok, result.ok ? null : result.error);
      if (!result.ok) throw new ApiError('CP_ERR_CHECK_FAILED', result.error, { ok: false });
      return { ok: true, message: 'acme-dns accepted the credentials' };
    },
  );
}
