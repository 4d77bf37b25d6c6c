// The OpenID Connect provider (oidc-provider) as OAuth 2.1 wants it: authorization code with PKCE (S256) for every
// client, exact redirect URIs, refresh tokens rotated on each use (a reused one revokes the grant), no implicit or
// hybrid flow, no password or client-credentials grant. Its state lives in the database (adapter.ts), its signing keys
// too (keys.ts); each process rebuilds its provider when the set of published keys changes (a rotation anywhere).
import { hkdfSync } from 'node:crypto';
import type { default as Provider, Account, Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { Provider as OidcProvider } from './oidc.js';
import { sql } from 'drizzle-orm';
import { ensureSecret } from '@platform/shared/node-token';
import type { Db } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { CERTIFICATE_KEY_FILE, keyVault, type KeyVault } from '../ssl/key-vault.js';
import { createAdapterFactory } from './adapter.js';
import { secretMatches } from './clients.js';
import type { SsoConfig } from './config.js';
import {
  CLOCK_TOLERANCE_SECONDS,
  loadSigningKeys,
  retiredKeySeconds,
  rotateSigningKey,
  SIGNING_ALG,
  type SigningKey,
} from './keys.js';
import { domainsClaim } from './apps.js';

/** Where the provider is mounted: the issuer is PUBLIC_BASE_URL + this. */
export const SSO_PREFIX = '/sso';
export const INTERACTION_PATH = `${SSO_PREFIX}/interaction`;
export const SCOPES = ['openid', 'offline_access', 'email', 'profile', 'domains'] as const;
const AUTHORIZATION_CODE_SECONDS = 60;
const INTERACTION_SECONDS = 600;
const SESSION_SECONDS = 14 * 86_400;

export interface SsoOptions {
  db: Db;
  publicBaseUrl: string;
  dataDir: string;
  certificateKey: string | undefined;
  sso: SsoConfig;
}

export interface Sso {
  readonly issuer: string;
  /** The provider with the keys in force (checked against the database at most every SSO_KEY_CHECK_MS). */
  provider(): Promise<Provider>;
  /** A new signing key now; the previous one stays published until its tokens have expired. */
  rotateKey(): Promise<{ kid: string; retired: string[] }>;
  /** Look at the keys again on the next request (after a rotation by another process, in tests). */
  invalidate(): void;
  /** The key that signs now (the provider's, in force as for provider()): edge session tokens are signed with it. */
  signingKey(): Promise<SigningKey>;
}

/** Accounts are users; `sub` is the user id. Deactivated accounts have no claims: their tokens stop working. */
async function findAccount(db: Db, ctx: KoaContextWithOIDC, sub: string): Promise<Account | undefined> {
  if (!/^[1-9]\d{0,9}$/.test(sub)) return undefined;
  const [user] = rowsOf<{ id: number; email: string; name: string; active: boolean }>(
    await db.execute(sql`SELECT id, email, name, active FROM users WHERE id = ${Number(sub)}`),
  );
  if (!user?.active) return undefined;
  const clientId = ctx.oidc?.client?.clientId;
  return {
    accountId: sub,
    async claims(_use, scope) {
      const scopes = new Set((scope ?? '').split(' '));
      return {
        sub,
        email: user.email,
        // Accounts are created with an address nobody has confirmed yet (admin command line, invitations).
        email_verified: false,
        name: user.name,
        ...(scopes.has('domains') && clientId ? { domains: await domainsClaim(db, user.id, clientId) } : {}),
      };
    },
  };
}

function configuration(opts: SsoOptions, keys: SigningKey[], cookieKeys: string[]): Configuration {
  const { db, sso } = opts;
  return {
    adapter: createAdapterFactory(db),
    jwks: { keys: keys.map((k) => k.privateJwk) as unknown as NonNullable<Configuration['jwks']>['keys'] },
    cookies: {
      keys: cookieKeys,
      names: { session: 'sso_session', interaction: 'sso_interaction', resume: 'sso_resume' },
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
    },
    features: {
      devInteractions: { enabled: false },
      // A client revokes only its own tokens (a public client's attempt at another's is silently ignored).
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      userinfo: { enabled: true },
      introspection: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      registration: { enabled: false },
      claimsParameter: { enabled: false },
      // Not offered: pushed authorization requests and DPoP-bound tokens (no client here needs them yet).
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
    },
    // OAuth 2.1 §4.1.1: PKCE for every client, confidential ones too; S256 is the only method oidc-provider takes.
    pkce: { required: () => true },
    responseTypes: ['code'],
    // OAuth 2.1 §2.3.1: the redirect URI is named in every request and compared exactly.
    allowOmittingSingleRegisteredRedirectUri: false,
    scopes: [...SCOPES],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      domains: ['domains'],
    },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: SIGNING_ALG,
    },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    // Asymmetric only: a client's secret is held as its hash (clients.ts), never as an HMAC key.
    enabledJWA: { idTokenSigningAlgValues: [SIGNING_ALG], userinfoSigningAlgValues: [SIGNING_ALG] },
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    // OAuth 2.1 §4.3.1: public clients' refresh tokens rotate; ours rotate for every client (reuse is detected).
    rotateRefreshToken: true,
    ttl: {
      AccessToken: sso.accessTokenSeconds,
      AuthorizationCode: AUTHORIZATION_CODE_SECONDS,
      IdToken: sso.idTokenSeconds,
      RefreshToken: sso.refreshTokenSeconds,
      Interaction: INTERACTION_SECONDS,
      Session: SESSION_SECONDS,
      Grant: sso.refreshTokenSeconds,
    },
    interactions: { url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}` },
    findAccount: (ctx, sub) => findAccount(db, ctx, sub),
    // Errors the browser lands on (a bad authorization request that cannot be redirected) as the API's JSON.
    renderError: (ctx, out) => {
      ctx.type = 'json';
      ctx.body = { error: out.error_description ? `${out.error}: ${out.error_description}` : out.error };
    },
  };
}

/** Cookie signing keys for every process: derived from CERTIFICATE_KEY (or DATA_DIR/certificate-key). */
function cookieKeys(opts: SsoOptions): string[] {
  const secret = ensureSecret(opts.dataDir, CERTIFICATE_KEY_FILE, opts.certificateKey);
  return [Buffer.from(hkdfSync('sha256', secret, 'platform-sso', 'sso cookie signing v1', 32)).toString('base64url')];
}

function buildProvider(opts: SsoOptions, issuer: string, keys: SigningKey[], cookies: string[]): Provider {
  const provider = new OidcProvider(issuer, configuration(opts, keys, cookies));
  // Our URLs come from PUBLIC_BASE_URL, never from the request's Host (routes.ts sets Host and X-Forwarded-Proto).
  provider.proxy = true;
  // The provider holds the sha256 of a client's secret (clients.ts); compare what is presented by its hash.
  (provider.Client.prototype as unknown as { compareClientSecret: (s: string) => boolean }).compareClientSecret =
    function (this: { clientSecret?: string }, presented: string) {
      return typeof this.clientSecret === 'string' && secretMatches(this.clientSecret, presented);
    };
  return provider;
}

export function createSso(opts: SsoOptions): Sso {
  const issuer = `${opts.publicBaseUrl}${SSO_PREFIX}`;
  const vault: KeyVault = keyVault({ dataDir: opts.dataDir, certificateKey: opts.certificateKey });
  let cookies: string[] | undefined;
  let current: { provider: Provider; kids: string; keys: SigningKey[]; checkedAt: number } | undefined;
  let loading: Promise<Provider> | undefined;

  const load = async (): Promise<Provider> => {
    const keys = await loadSigningKeys(opts.db, vault);
    const kids = keys.map((k) => `${k.kid}:${k.retiredAt ? 'retired' : 'active'}`).join(',');
    if (!current || current.kids !== kids) {
      cookies ??= cookieKeys(opts);
      current = { provider: buildProvider(opts, issuer, keys, cookies), kids, keys, checkedAt: Date.now() };
    } else current.checkedAt = Date.now();
    return current.provider;
  };

  const provider = (): Promise<Provider> => {
    if (current && Date.now() - current.checkedAt < opts.sso.keyCheckMs) return Promise.resolve(current.provider);
    loading ??= load().finally(() => (loading = undefined));
    return loading;
  };

  return {
    issuer,
    provider,
    async signingKey() {
      await provider();
      // loadSigningKeys orders the active key first.
      return current!.keys[0];
    },
    async rotateKey() {
      const rotated = await rotateSigningKey(opts.db, vault, retiredKeySeconds(opts.sso));
      if (current) current.checkedAt = 0;
      return rotated;
    },
    invalidate() {
      if (current) current.checkedAt = 0;
    },
  };
}
