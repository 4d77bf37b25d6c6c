// The control plane's ACME settings, read by config.ts through its EnvReader. The control plane decides them and hands
// them to the certificate workflows (directory and contact through /internal/domains/{domain}/acme/plan, durations as
// workflow arguments), so the worker needs none of them.
import type { EnvReader } from '@platform/shared';

export interface AcmeConfig {
  /** ACME_DIRECTORY_URL: the CA's directory; '' (the default) turns issuance off and ssl/issue answers 503. */
  directoryUrl: string;
  /** ACME_EMAIL: contact address of the account ('' none). */
  email: string;
  /** How often domains whose proxied names lack a certificate are looked for (a new proxied record is noticed then). */
  sweepMs: number;
  /** A failed order is tried again after this, doubling up to retryMaxMs. */
  retryFirstMs: number;
  retryMaxMs: number;
  /** How long our DNS nodes get to serve a challenge TXT, and how often they are asked. */
  challengeWaitMs: number;
  challengePollMs: number;
  /** Renew this long before expiry (or at two thirds of the lifetime, when later). */
  renewBeforeMs: number;
  /** POST ssl/issue once per this per domain (next_manual_issue_at). */
  manualCooldownMs: number;
}

export function loadAcmeConfig(r: EnvReader): AcmeConfig {
  const s = (key: string, fallback: number, max = 365 * 86400) => r.int(key, fallback, 1, max) * 1000;
  return {
    directoryUrl: r.string('ACME_DIRECTORY_URL', ''),
    email: r.string('ACME_EMAIL', ''),
    sweepMs: s('ACME_SWEEP_SECONDS', 60),
    retryFirstMs: s('ACME_RETRY_FIRST_SECONDS', 60),
    retryMaxMs: s('ACME_RETRY_MAX_SECONDS', 6 * 3600),
    challengeWaitMs: s('ACME_CHALLENGE_WAIT_SECONDS', 300),
    challengePollMs: r.int('ACME_CHALLENGE_POLL_MS', 1000, 100, 60_000),
    renewBeforeMs: s('ACME_RENEW_BEFORE_SECONDS', 30 * 86400),
    manualCooldownMs: s('ACME_MANUAL_COOLDOWN_SECONDS', 900),
  };
}
