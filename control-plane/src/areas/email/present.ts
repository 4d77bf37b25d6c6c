// Email routing rows → API bodies.
import type { ActivityRow, AddressRow, DestinationRow, RoutingRow } from './store.js';

const iso = (v: Date | string | null | undefined) => (v == null ? null : new Date(v).toISOString());

export function presentRouting(r: RoutingRow) {
  return {
    enabled: r.enabled,
    records_locked: r.records_locked,
    dkim_selector: r.dkim_selector,
    settings: { dmarc_policy: r.settings?.dmarc_policy ?? 'honor' },
    last_check: (r.last_check as object | null) ?? null,
  };
}

export function presentAddress(r: AddressRow, zone: string, verified: boolean) {
  return {
    id: r.id,
    address: `${r.local_part}@${zone}`,
    destination: r.destination,
    destination_verified: verified,
    enabled: r.enabled,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

export function presentDestination(d: DestinationRow) {
  return {
    id: d.id,
    email: d.email,
    verified: d.verified_at !== null,
    verified_at: iso(d.verified_at),
    verification_sent_at: iso(d.sent_at),
    created_at: iso(d.created_at)!,
  };
}

export function presentActivity(a: ActivityRow) {
  return {
    id: Number(a.id),
    at: iso(a.at)!,
    direction: a.direction,
    mail_from: a.mail_from,
    rcpt_to: a.rcpt_to,
    destination: a.destination,
    message_id: a.message_id,
    size: a.size,
    spf: a.spf,
    dkim: a.dkim,
    dmarc: a.dmarc,
    action: a.action,
    reason: a.reason,
    smtp_response: a.smtp_response,
  };
}
