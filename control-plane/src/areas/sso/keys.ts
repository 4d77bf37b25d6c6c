// SSO signing keys (RS256, the OpenID basic profile's algorithm): the newest key that is not retired signs; a rotation
// retires it and keeps it published in the JWKS until the last token it signed has expired (publish_until), so
// relying parties that cached the old key set, and tokens issued before the rotation, still verify.
import { createHash, generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import type { KeyVault } from '../ssl/key-vault.js';
import type { SsoConfig } from './config.js';

export const SIGNING_ALG = 'RS256';
/** Seconds of clock skew tolerated; a retired key stays published this much longer than its tokens live. */
export const CLOCK_TOLERANCE_SECONDS = 15;

/** How long a retired key stays published: the longest lifetime of a token it signed (ID tokens), plus tolerance. */
export function retiredKeySeconds(sso: SsoConfig): number {
  return sso.idTokenSeconds + CLOCK_TOLERANCE_SECONDS;
}

export interface SigningKey {
  kid: string;
  /** The private JWK (kid, alg, use set), for oidc-provider's `jwks`. */
  privateJwk: JsonWebKey & { kid: string; alg: string; use: 'sig' };
  retiredAt: Date | null;
  publishUntil: Date | null;
  createdAt: Date;
}

const sealId = (kid: string) => `sso-signing-key:${kid}`;

/** RFC 7638 thumbprint of an RSA public key: the key id. */
function thumbprint(jwk: JsonWebKey): string {
  const canonical = JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n });
  return createHash('sha256').update(canonical).digest('base64url');
}

function newKey() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pub = publicKey.export({ format: 'jwk' });
  const kid = thumbprint(pub);
  const priv = privateKey.export({ format: 'jwk' });
  return {
    kid,
    publicJwk: { ...pub, kid, alg: SIGNING_ALG, use: 'sig' },
    privateJwk: { ...priv, kid, alg: SIGNING_ALG, use: 'sig' as const },
  };
}

interface KeyRow {
  kid: string;
  sealed_private: string;
  created_at: Date | string;
  retired_at: Date | string | null;
  publish_until: Date | string | null;
}
const date = (v: Date | string | null) => (v === null ? null : new Date(v));

/**
 * The keys to publish now, the signing one first (newest active, then retired ones newest first); creates the first
 * key when there is none. Retired keys past publish_until are left out (and deleted).
 */
export async function loadSigningKeys(db: Db, vault: KeyVault): Promise<SigningKey[]> {
  let rows = await readKeys(db);
  if (!rows.some((r) => r.retired_at === null)) {
    // Several processes may start at once: the first to take the lock creates the key, the others find it.
    await db.transaction(async (tx) => {
      await tx.execute(sql`LOCK TABLE sso_signing_keys IN SHARE ROW EXCLUSIVE MODE`);
      const active = rowsOf(await tx.execute(sql`SELECT 1 FROM sso_signing_keys WHERE retired_at IS NULL LIMIT 1`));
      if (active.length === 0) await insertKey(tx, vault);
    });
    rows = await readKeys(db);
  }
  return rows.map((r) => ({
    kid: r.kid,
    privateJwk: JSON.parse(vault.open(r.sealed_private, sealId(r.kid))) as SigningKey['privateJwk'],
    createdAt: new Date(r.created_at),
    retiredAt: date(r.retired_at),
    publishUntil: date(r.publish_until),
  }));
}

async function readKeys(db: Db): Promise<KeyRow[]> {
  await db.execute(sql`DELETE FROM sso_signing_keys WHERE publish_until IS NOT NULL AND publish_until <= now()`);
  return rowsOf<KeyRow>(
    await db.execute(sql`
      SELECT kid, sealed_private, created_at, retired_at, publish_until FROM sso_signing_keys
      ORDER BY (retired_at IS NULL) DESC, created_at DESC, kid`),
  );
}

async function insertKey(db: Db | Tx, vault: KeyVault): Promise<string> {
  const key = newKey();
  await db.execute(sql`
    INSERT INTO sso_signing_keys (kid, alg, public_jwk, sealed_private)
    VALUES (${key.kid}, ${SIGNING_ALG}, ${JSON.stringify(key.publicJwk)}::jsonb,
      ${vault.seal(JSON.stringify(key.privateJwk), sealId(key.kid))})`);
  return key.kid;
}

/**
 * A new signing key; the current one is retired and stays published for `publishSeconds` (the longest lifetime of
 * a token it signed, plus the clock tolerance). Returns the new key id and the retired ones.
 */
export async function rotateSigningKey(
  db: Db,
  vault: KeyVault,
  publishSeconds: number,
): Promise<{ kid: string; retired: string[] }> {
  return db.transaction(async (tx) => {
    // One rotation at a time: the lock orders concurrent rotations (each retires what the one before created).
    await tx.execute(sql`LOCK TABLE sso_signing_keys IN SHARE ROW EXCLUSIVE MODE`);
    const retired = rowsOf<{ kid: string }>(
      await tx.execute(sql`
        UPDATE sso_signing_keys SET retired_at = now(),
          publish_until = now() + make_interval(secs => ${publishSeconds})
        WHERE retired_at IS NULL RETURNING kid`),
    ).map((r) => r.kid);
    const kid = await insertKey(tx, vault);
    return { kid, retired };
  });
}

/** Every stored key for the admin command line: kid, state, dates. */
export async function listSigningKeys(db: Db) {
  return rowsOf<KeyRow>(
    await db.execute(sql`
      SELECT kid, '' AS sealed_private, created_at, retired_at, publish_until FROM sso_signing_keys
      ORDER BY created_at DESC, kid`),
  ).map((r) => ({
    kid: r.kid,
    createdAt: new Date(r.created_at),
    retiredAt: date(r.retired_at),
    publishUntil: date(r.publish_until),
  }));
}
