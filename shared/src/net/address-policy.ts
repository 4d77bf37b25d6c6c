// Which addresses the platform may connect to on a tenant's behalf (origins, health probes, webhooks): no loopback,
// private, link-local (cloud metadata), multicast, unspecified or CGNAT address, nor the platform's own endpoints,
// unless the operator lists the range in ALLOWED_PRIVATE_NETWORKS. Checked on the address actually connected to.
import { lookup } from 'node:dns';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { PlatformError } from '../errors.js';
import type { EnvReader } from '../env.js';
import { canonicaliseIpEntry, parseIp, type IpRange, type IpValue } from '../match/ip.js';

export type { IpRange };

/** The environment variable holding the operator's allowlist (comma-separated CIDRs, empty by default). */
export const ALLOWED_PRIVATE_NETWORKS = 'ALLOWED_PRIVATE_NETWORKS';

/** Ranges refused unless allowed, each with the reason a tenant is told. IPv4-mapped IPv6 is unmapped first. */
const REFUSED: [string, string][] = [
  ['0.0.0.0/8', 'an unspecified ("this network") address'],
  ['10.0.0.0/8', 'a private address (RFC 1918)'],
  ['100.64.0.0/10', 'a shared (CGNAT) address'],
  ['127.0.0.0/8', 'a loopback address'],
  ['169.254.0.0/16', 'a link-local address (cloud metadata lives there)'],
  ['172.16.0.0/12', 'a private address (RFC 1918)'],
  ['192.168.0.0/16', 'a private address (RFC 1918)'],
  ['224.0.0.0/4', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved or broadcast address'],
  ['::/128', 'an unspecified address'],
  ['::1/128', 'a loopback address'],
  // Reserved by the IETF (IPv4-compatible forms among them); NAT64 (64:ff9b::/96) is judged by its IPv4 part below.
  ['::/8', 'a reserved address'],
  ['fc00::/7', 'a unique local address (private)'],
  ['fe80::/10', 'a link-local address'],
  ['fec0::/10', 'a site-local address (private)'],
  ['ff00::/8', 'a multicast address'],
];

const REFUSED_RANGES: { range: IpRange; reason: string }[] = REFUSED.map(([cidr, reason]) => {
  const r = canonicaliseIpEntry(cidr);
  if (typeof r === 'string') throw new Error(r);
  return { range: r.range, reason };
});

const NAT64_PREFIX = 0x0064ff9b0000000000000000n; // 64:ff9b::/96 (the well-known NAT64 prefix), shifted right 32
const SIX_TO_FOUR = 0x2002n; // 2002::/16 embeds an IPv4 address in bits 16..47

function inRange(ip: IpValue, r: IpRange): boolean {
  return ip.v6 === r.v6 && ip.value >= r.low && ip.value <= r.high;
}

/** The IPv4 address an IPv6 one stands for (NAT64, 6to4), so that 64:ff9b::127.0.0.1 is judged as 127.0.0.1. */
function embeddedV4(ip: IpValue): IpValue | undefined {
  if (!ip.v6) return undefined;
  if (ip.value >> 32n === NAT64_PREFIX) return { v6: false, value: ip.value & 0xffffffffn };
  if (ip.value >> 112n === SIX_TO_FOUR) return { v6: false, value: (ip.value >> 80n) & 0xffffffffn };
  return undefined;
}

/** An endpoint of the platform itself; `port` null means every port of that address. */
export interface OwnEndpoint {
  address: string;
  port: number | null;
}

export interface Refusal {
  address: string;
  reason: string;
}

/** Parses ALLOWED_PRIVATE_NETWORKS-style text: CIDRs or single addresses, comma-separated. */
export function parseNetworks(raw: string): { ranges: IpRange[]; problems: string[] } {
  const ranges: IpRange[] = [];
  const problems: string[] = [];
  for (const entry of raw.split(',').map((s) => s.trim())) {
    if (entry === '') continue;
    const r = entry.includes('-') ? `invalid CIDR "${entry}" (use a/n)` : canonicaliseIpEntry(entry);
    if (typeof r === 'string') problems.push(r);
    else ranges.push(r.range);
  }
  return { ranges, problems };
}

/** Reads ALLOWED_PRIVATE_NETWORKS for a package's config.ts (problems join the reader's). */
export function readAllowedNetworks(r: EnvReader): IpRange[] {
  const { ranges, problems } = parseNetworks(r.string(ALLOWED_PRIVATE_NETWORKS, ''));
  for (const p of problems) r.problems.push(`${ALLOWED_PRIVATE_NETWORKS}: ${p}`);
  return ranges;
}

/** The machine's own addresses: what a wildcard listener (0.0.0.0, ::) answers on. */
function localAddresses(): string[] {
  const out = ['0.0.0.0', '::', '127.0.0.1', '::1'];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.push(a.address);
  return out;
}

export class AddressPolicy {
  /** canonical address text → ports of the platform there (null: all). */
  private readonly own = new Map<string, Set<number> | null>();

  constructor(
    private readonly allowed: readonly IpRange[],
    own: readonly OwnEndpoint[] = [],
  ) {
    for (const e of own) this.addOwn(e);
  }

  /** Adds an endpoint of the platform (a listen address, the control plane); wildcard hosts cover every local address. */
  addOwn(e: OwnEndpoint): void {
    const host = e.address.replace(/^\[|\]$/g, '');
    const addresses = host === '0.0.0.0' || host === '::' ? localAddresses() : [host];
    for (const a of addresses) {
      const ip = parseIp(a);
      if (!ip) continue;
      const key = `${ip.v6 ? 6 : 4}:${ip.value}`;
      const ports = this.own.get(key);
      if (ports === null) continue;
      if (e.port === null) this.own.set(key, null);
      else if (ports) ports.add(e.port);
      else this.own.set(key, new Set([e.port]));
    }
  }

  /** Why the platform will not connect to `address` (an IP literal) on `port`, or undefined when it may. */
  refusal(address: string, port: number): Refusal | undefined {
    const ip = parseIp(address);
    if (!ip) return { address, reason: 'not an IP address' };
    const ports = this.own.get(`${ip.v6 ? 6 : 4}:${ip.value}`);
    if (ports === null || ports?.has(port))
      return { address, reason: `an address of the platform itself (port ${port})` };
    const judged = embeddedV4(ip) ?? ip;
    if (this.allowed.some((r) => inRange(judged, r))) return undefined;
    for (const { range, reason } of REFUSED_RANGES) if (inRange(judged, range)) return { address, reason };
    return undefined;
  }

  /** True when the operator allows `address` explicitly (inside ALLOWED_PRIVATE_NETWORKS). */
  isAllowedExplicitly(address: string): boolean {
    const ip = parseIp(address);
    return ip !== undefined && this.allowed.some((r) => inRange(embeddedV4(ip) ?? ip, r));
  }
}

export type AddressRefusedCode = 'NET_ERR_ADDRESS_REFUSED';

/** A connection the policy refused; `refusal` says which address and why. */
export class AddressRefusedError extends PlatformError<AddressRefusedCode> {
  constructor(
    readonly host: string,
    readonly refusal: Refusal,
  ) {
    super(
      'NET_ERR_ADDRESS_REFUSED',
      host === refusal.address
        ? `${host} is ${refusal.reason}`
        : `${host} resolves to ${refusal.address}, ${refusal.reason}`,
    );
  }
}

export function isAddressRefused(err: unknown): err is AddressRefusedError {
  return (err as { code?: unknown } | null)?.code === 'NET_ERR_ADDRESS_REFUSED';
}

/**
 * Resolves `host` (a name or an IP literal) and returns the first address the policy allows, to connect to that
 * address and no other: a name that resolves differently on the next lookup (DNS rebinding) cannot slip through.
 */
export function resolveAllowed(policy: AddressPolicy, host: string, port: number): Promise<string> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare) !== 0) {
    const refusal = policy.refusal(bare, port);
    return refusal ? Promise.reject(new AddressRefusedError(bare, refusal)) : Promise.resolve(bare);
  }
  return new Promise((resolve, reject) => {
    lookup(bare, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return reject(err);
      let first: Refusal | undefined;
      for (const a of addresses) {
        const refusal = policy.refusal(a.address, port);
        if (!refusal) return resolve(a.address);
        first ??= refusal;
      }
      reject(new AddressRefusedError(bare, first ?? { address: bare, reason: 'a name without addresses' }));
    });
  });
}
