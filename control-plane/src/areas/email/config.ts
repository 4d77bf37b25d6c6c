// MAIL_* settings the control plane reads: what enable publishes (MX hosts, the SPF include) and how the control plane
// itself sends mail (verification links, the send API): the same names as the mail node's (mail-node/src/config.ts).
import type { EnvReader } from '@platform/shared';

export interface EmailConfig {
  /** The platform's mail exchangers, published as the domain's MX records (preference 10, 20, …). */
  mxHosts: string[];
  /** The SPF record published: `v=spf1 include:<this> ~all`. */
  spfInclude: string;
  /** Envelope and From address of the platform's own mail (verification links). */
  systemFrom: string;
  /** DNS servers for MX lookups (host[:port]); empty: the system's. */
  resolvers: string[];
  /** Port of the destination MX hosts: 25 (tests: their sink's port). */
  deliveryPort: number;
  /** The name said in EHLO. */
  ehloName: string;
  /** Seconds an emailed verification link stays valid. */
  verifyLinkSeconds: number;
  /** Delays between the retries of a held message (the destination deferred it); their count is the retry budget. */
  retryDelaysMs: number[];
  /** Largest message held for retry (bigger: 451 back to the sender, whose MTA retries). */
  holdMaxBytes: number;
  /** Messages one domain may have held at once (more: 451 back to the sender). */
  holdMaxPerDomain: number;
}

/** Default retries: after 1, 5, 15, 30 minutes, 1, 2, 4, 6 and 8 hours (about 23 hours in all). */
const RETRY_DELAYS_SECONDS = [60, 300, 900, 1800, 3600, 7200, 14_400, 21_600, 28_800];

export function loadEmailConfig(r: EnvReader): EmailConfig {
  const mxHosts = r.list('MAIL_MX_HOSTS', ['mx1.mail.platform.test', 'mx2.mail.platform.test']);
  return {
    mxHosts: mxHosts.map((h) => h.toLowerCase().replace(/\.$/, '')),
    spfInclude: r.string('MAIL_SPF_INCLUDE', '_spf.mail.platform.test'),
    systemFrom: r.string('MAIL_SYSTEM_FROM', 'no-reply@mail.platform.test'),
    resolvers: r.list('MAIL_RESOLVERS', []),
    deliveryPort: r.int('MAIL_DELIVERY_PORT', 25, 1, 65535),
    ehloName: r.string('MAIL_EHLO_NAME', mxHosts[0] ?? 'localhost'),
    verifyLinkSeconds: r.int('MAIL_VERIFY_LINK_SECONDS', 86_400, 1, 30 * 86_400),
    retryDelaysMs: retryDelays(r.list('MAIL_RETRY_DELAYS_SECONDS', RETRY_DELAYS_SECONDS.map(String))),
    holdMaxBytes: r.int('MAIL_HOLD_MAX_BYTES', 10 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    holdMaxPerDomain: r.int('MAIL_HOLD_MAX_PER_DOMAIN', 200, 0, 100_000),
  };
}

/** 1–20 delays of 1 s to 2 days each, at most 5 days in all (the longest a sealed message is kept). */
function retryDelays(list: string[]): number[] {
  const delays = list.map((v) => Number(v));
  const total = delays.reduce((a, b) => a + b, 0);
  if (
    delays.length < 1 ||
    delays.length > 20 ||
    delays.some((d) => !Number.isInteger(d) || d < 1 || d > 2 * 86_400) ||
    total > 5 * 86_400
  )
    throw new Error(
      `MAIL_RETRY_DELAYS_SECONDS: 1 to 20 whole seconds, each 1 to 172800, at most 432000 in all (got ${list.join(',')})`,
    );
  return delays.map((d) => d * 1000);
}
