// Turns domain rows into the DomainDetail and DomainWithSsl bodies of the API.
import { domainToUnicode } from 'node:url';
import type { domains } from '../../db/schema.js';
import type { Permission, Role } from '../../auth/permissions.js';
import type { ControlPlaneConfig } from '../../config.js';
import { buildSettings } from '../../config-log/snapshot.js';
import type { DomainDetailT, DomainWithSslT } from './schemas.js';

type DomainRow = typeof domains.$inferSelect;

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** The domain's edge settings exactly as its config-log snapshot gives them to nodes (buildSettings). */
export function edgeSettings(row: DomainRow, now = new Date()): DomainDetailT['settings'] {
  const s = buildSettings(row, now.getTime());
  return {
    developer_mode: s.developerMode,
    developer_mode_expires_at: s.developerMode ? new Date(s.developerModeExpiresAtMs).toISOString() : null,
    cache_l2_ttl_days: s.cacheL2TtlDays,
    cache_cap_mb: s.cacheCapMb,
    origin_protocol: (s.originProtocol || 'auto') as DomainDetailT['settings']['origin_protocol'],
    under_attack: s.underAttack === true,
  };
}

export function presentDomain(
  row: DomainRow,
  role: Role,
  permissions: Permission[],
  config: Readonly<ControlPlaneConfig>,
  now = new Date(),
): DomainDetailT {
  const v = row.verification as { name?: string; value?: string; expires_at?: string } | null;
  const d = row.sslDelegation as { name?: string; target?: string } | null;
  const devUntil = row.developerModeUntil && row.developerModeUntil > now ? row.developerModeUntil : null;
  return {
    id: row.id,
    name: row.name,
    unicode_name: domainToUnicode(row.name) || row.name,
    dns_mode: row.dnsMode,
    state: row.state,
    verification_state: row.verificationState,
    nameservers: [...(config.nsSets[row.nsSetIndex ?? 0] ?? config.nsSets[0] ?? [])],
    cache_l2_ttl_days: row.cacheL2TtlDays,
    cache_cap_mb: row.cacheCapMb,
    origin_protocol: row.originProtocol as DomainDetailT['origin_protocol'],
    developer_mode: devUntil !== null,
    developer_mode_expires_at: iso(devUntil),
    verification:
      v?.name && v.value && v.expires_at
        ? { type: 'TXT', name: v.name, value: v.value, expires_at: v.expires_at }
        : null,
    ssl_delegation:
      row.dnsMode === 'external' && d?.name && d.target ? { type: 'CNAME', name: d.name, target: d.target } : null,
    settings: edgeSettings(row, now),
    role,
    permissions,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export interface ListExtras {
  plan: { slug: string; name: string; status: string; expiresAt: Date | null } | null;
  /** sslSummaries(...).get(domain id). */
  ssl?: { status: string; expires_at: string | null };
}

/**
 * The SSL summary of the list: computed by sslSummaries (areas/ssl/service.ts) with the same rule as GET ssl/; a
 * domain it has no entry for is `missing`.
 */
export function sslSummary(ssl: ListExtras['ssl']): DomainWithSslT['ssl'] {
  return ssl ? { status: ssl.status, expires_at: ssl.expires_at } : { status: 'missing', expires_at: null };
}

export function presentListItem(
  row: DomainRow,
  role: Role,
  permissions: Permission[],
  config: Readonly<ControlPlaneConfig>,
  extras: ListExtras,
): DomainWithSslT {
  return {
    ...presentDomain(row, role, permissions, config),
    ssl: sslSummary(extras.ssl),
    subscription: extras.plan
      ? {
          plan: extras.plan.slug,
          plan_name: extras.plan.name,
          status: extras.plan.status,
          expires_at: iso(extras.plan.expiresAt),
        }
      : null,
  };
}
