// The gateway catalogue: ready-made record sets a domain can switch on (spec "Gateways: ready-made records a domain
// can switch on"), fixed in code like Domain Connect templates or Cloudflare's DNS templates for a provider. Each
// entry names its records with the zone's name filled in; switching on creates them through the records' own
// checks, switching off removes the ones it created. Reasons: docs/decisions.md ("Gateways").
import type { RecordCreate } from '../records/types.js';

export interface Gateway {
  id: string;
  title: string;
  description: string;
  /** The records switching on creates in `zone` (punycode, no trailing dot). */
  records(zone: string): RecordCreate[];
  /** Holds an SPF policy at the apex: refused when the zone has another one (RFC 7208 §3.2: one per name). */
  spf?: true;
  /** Our own drawing, 64×64 SVG, no script, no external reference. */
  icon: string;
}

const TTL = 3600;

/** A 64×64 icon: a rounded square of `color` with up to three letters. */
function icon(color: string, letters: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">` +
    `<rect width="64" height="64" rx="12" fill="${color}"/>` +
    `<text x="32" y="41" font-family="sans-serif" font-size="22" font-weight="700" fill="#fff" ` +
    `text-anchor="middle">${letters}</text></svg>`
  );
}

export const GATEWAYS: readonly Gateway[] = [
  {
    id: 'google-workspace',
    title: 'Google Workspace mail',
    description: "Receive the domain's mail in Google Workspace (Gmail): its MX record and SPF policy",
    records: () => [
      { name: '@', type: 'MX', destination: 'smtp.google.com', mx_priority: 1, ttl: TTL, proxied: false },
      { name: '@', type: 'TXT', destination: 'v=spf1 include:_spf.google.com ~all', ttl: TTL, proxied: false },
    ],
    spf: true,
    icon: icon('#1a73e8', 'GW'),
  },
  {
    id: 'microsoft-365',
    title: 'Microsoft 365 mail',
    description: "Receive the domain's mail in Exchange Online: MX, Autodiscover and SPF policy",
    records: (zone) => [
      {
        name: '@',
        type: 'MX',
        destination: `${zone.replaceAll('.', '-')}.mail.protection.outlook.com`,
        mx_priority: 0,
        ttl: TTL,
        proxied: false,
      },
      { name: 'autodiscover', type: 'CNAME', destination: 'autodiscover.outlook.com', ttl: TTL, proxied: false },
      {
        name: '@',
        type: 'TXT',
        destination: 'v=spf1 include:spf.protection.outlook.com -all',
        ttl: TTL,
        proxied: false,
      },
    ],
    spf: true,
    icon: icon('#d83b01', '365'),
  },
  {
    id: 'github-pages',
    title: 'GitHub Pages static site',
    description: "Serve the apex from GitHub Pages: GitHub's four IPv4 and four IPv6 addresses",
    records: () => [
      ...[108, 109, 110, 111].map((n) => ({
        name: '@',
        type: 'A',
        destination: `185.199.${n}.153`,
        ttl: TTL,
        proxied: false,
      })),
      ...[0, 1, 2, 3].map((n) => ({
        name: '@',
        type: 'AAAA',
        destination: `2606:50c0:800${n}::153`,
        ttl: TTL,
        proxied: false,
      })),
    ],
    icon: icon('#24292f', 'GH'),
  },
];

const BY_ID = new Map(GATEWAYS.map((g) => [g.id, g]));

export function gatewayById(id: string): Gateway | undefined {
  return BY_ID.get(id);
}

/** The version of the gateways' terms of use an account accepts; a new version asks every account again. */
export const TERMS_VERSION = '2026-11-26';

export const TERMS_TEXT =
  'Switching a gateway on publishes the records listed for it in your zone. The service named by a gateway is ' +
  "provided by its operator under that operator's terms, not by this platform; the platform does not check that you " +
  'hold an account there. You are responsible for the mail and traffic the records direct, and for removing them ' +
  '(switching the gateway off) when you stop using the service.';
