// SSO settings (SSO_*), read by config.ts through its EnvReader: token lifetimes and how often a process looks for a
// rotated signing key.
import type { EnvReader } from '@platform/shared';

export interface SsoConfig {
  /** SSO_ACCESS_TOKEN_SECONDS: lifetime of an access token (opaque; userinfo takes it). */
  accessTokenSeconds: number;
  /** SSO_ID_TOKEN_SECONDS: lifetime of an ID token; a retired signing key stays published this long (+ tolerance). */
  idTokenSeconds: number;
  /** SSO_REFRESH_TOKEN_SECONDS: lifetime of a refresh token (each use rotates it). */
  refreshTokenSeconds: number;
  /** SSO_KEY_CHECK_MS: how often a process compares its signing keys with the database's (another process rotated). */
  keyCheckMs: number;
}

export function loadSsoConfig(r: EnvReader): SsoConfig {
  return {
    accessTokenSeconds: r.int('SSO_ACCESS_TOKEN_SECONDS', 3600, 1, 86_400),
    idTokenSeconds: r.int('SSO_ID_TOKEN_SECONDS', 3600, 1, 86_400),
    refreshTokenSeconds: r.int('SSO_REFRESH_TOKEN_SECONDS', 14 * 86_400, 60, 365 * 86_400),
    keyCheckMs: r.int('SSO_KEY_CHECK_MS', 10_000, 0, 3_600_000),
  };
}
