// Certificate rows and the SSL status → API bodies. No body has a private key: rows read for the API carry none.
import type { CertificateRow } from './store.js';
import type { SslStatus } from './service.js';
import type { CertificateT, SslInfoT } from './schemas.js';

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

export function presentCertificate(row: CertificateRow, served: readonly string[], now = new Date()): CertificateT {
  return {
    id: row.id,
    source: row.source,
    status: row.notAfter.getTime() <= now.getTime() ? 'expired' : served.length > 0 ? 'active' : 'inactive',
    chosen: row.selected,
    hostnames: row.hostnames,
    served_hostnames: [...served],
    subject: row.subject,
    issuer: row.issuer,
    serial_number: row.serialNumber,
    fingerprint_sha256: row.fingerprint,
    not_before: row.notBefore.toISOString(),
    not_after: row.notAfter.toISOString(),
    sans: row.sans,
    key_type: row.keyType,
    key_size: row.keySize,
    created_at: row.createdAt.toISOString(),
  };
}

export function presentSslInfo(s: SslStatus): SslInfoT {
  const p = s.primary;
  return {
    status: s.summary.status,
    certificate_id: p?.id ?? null,
    source: p?.source ?? null,
    issuer: p?.issuer ?? null,
    subject: p?.subject ?? null,
    not_before: iso(p?.notBefore),
    not_after: iso(p?.notAfter),
    sans: p?.sans ?? [],
    served_hostnames: s.served,
    key_type: p?.keyType ?? null,
    key_size: p?.keySize ?? null,
    can_manual_issue: s.canManualIssue,
    next_manual_issue_at: iso(s.issuance.nextManualIssueAt),
    last_issue_attempt_at: iso(s.issuance.lastIssueAttemptAt),
    last_error: s.issuance.lastError,
    coverage: s.uncovered.map((hostname) => {
      const h = s.issuance.hostnames[hostname];
      return {
        hostname,
        state: h && h.attempts > 0 ? 'retrying' : 'waiting',
        attempts: h?.attempts ?? 0,
        last_error: h?.last_error ?? null,
        next_retry_at: h?.next_retry_at ?? null,
      };
    }),
    coverage_total: s.uncoveredTotal,
  };
}
