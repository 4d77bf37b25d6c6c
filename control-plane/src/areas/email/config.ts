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
}

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
  };
}
