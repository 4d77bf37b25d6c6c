// DNS activities: ask the configured public resolvers (DNS_RESOLVERS) about a domain's delegation,
// verification records, ACME delegation and existing records.
import DNS from 'dns2';
import type { Resolver } from '../config.js';
import { SCAN_LABELS } from '../scan-labels.js';
import type { ResolverObservation, ScannedRecord, SslDelegationBlock, VerificationBlock } from '../types.js';

export interface DnsDeps {
  resolvers: Resolver[];
  timeoutMs: number;
}

export const SCAN_TYPES = ['CNAME', 'A', 'AAAA', 'MX', 'TXT', 'NS', 'CAA'] as const;

export interface Answer {
  name: string;
  type: number;
  ttl: number;
  [field: string]: unknown;
}

export const TYPE_NAMES = new Map<number, string>(Object.entries(DNS.Packet.TYPE).map(([k, v]) => [v as number, k]));
const RCODE_NAMES: Record<number, string> = { 1: 'FORMERR', 2: 'SERVFAIL', 3: 'NXDOMAIN', 4: 'NOTIMP', 5: 'REFUSED' };

export const norm = (name: string) => name.toLowerCase().replace(/\.$/, '');

/** Presentation form of one answer's RDATA, as the records API stores destinations. */
export function presentValue(a: Answer): string {
  switch (TYPE_NAMES.get(a.type)) {
    case 'A':
    case 'AAAA':
      return String(a.address);
    case 'NS':
      return norm(String(a.ns));
    case 'CNAME':
    case 'PTR':
      return norm(String(a.domain));
    case 'MX':
      return norm(String(a.exchange));
    case 'TXT':
    case 'SPF':
      return Array.isArray(a.data) ? a.data.join('') : String(a.data);
    case 'CAA':
      return `${Number(a.flags)} ${String(a.tag)} "${String(a.value)}"`;
    case 'SRV':
      return `${Number(a.weight)} ${Number(a.port)} ${norm(String(a.target)) || '.'}`;
    default:
      return '';
  }
}

/** One answer as a scanned record at `label`: TTL within 1 s … 1 week, an MX's or SRV's priority apart. */
export function scannedRecord(label: string, type: string, a: Answer): ScannedRecord {
  const rec: ScannedRecord = {
    name: label,
    type,
    destination: presentValue(a),
    ttl: Math.min(Math.max(Number(a.ttl) || 120, 1), 604800),
  };
  if (type === 'MX' || type === 'SRV') rec.mx_priority = Number(a.priority);
  return rec;
}

interface RawAnswer {
  resolver: string;
  rcode: number;
  answers: Answer[];
  authorities: Answer[];
  error?: string;
}

async function ask(deps: DnsDeps, r: Resolver, name: string, type: string): Promise<RawAnswer> {
  const resolver = `${r.host}:${r.port}`;
  try {
    const client = DNS.UDPClient({ dns: r.host, port: r.port, timeout: deps.timeoutMs, retryOverTCP: true });
    const res = await client(name, type);
    return {
      resolver,
      rcode: res.header.rcode,
      answers: res.answers as unknown as Answer[],
      authorities: res.authorities as unknown as Answer[],
    };
  } catch (err) {
    return {
      resolver,
      rcode: -1,
      answers: [],
      authorities: [],
      error: err instanceof Error ? err.message : String(err),
    };
  }
}

/** Asks every resolver for name/type; values are the answers of that type (following a CNAME the resolver chased). */
export async function observe(
  deps: DnsDeps,
  name: string,
  type: string,
  opts: { authorityFallback?: boolean } = {},
): Promise<ResolverObservation[]> {
  const typeCode = DNS.Packet.TYPE[type as keyof typeof DNS.Packet.TYPE];
  return Promise.all(
    deps.resolvers.map(async (r) => {
      const raw = await ask(deps, r, name, type);
      if (raw.error) return { resolver: raw.resolver, values: [], error: raw.error };
      if (raw.rcode !== 0)
        return { resolver: raw.resolver, values: [], error: RCODE_NAMES[raw.rcode] ?? `rcode ${raw.rcode}` };
      let records = raw.answers.filter((a) => a.type === typeCode);
      // A parent server answers a delegation as a referral: the NS set is in the authority section.
      if (records.length === 0 && opts.authorityFallback)
        records = raw.authorities.filter((a) => a.type === typeCode && norm(a.name) === norm(name));
      const cnameRecord = raw.answers.find((a) => TYPE_NAMES.get(a.type) === 'CNAME' && norm(a.name) === norm(name));
      const obs: ResolverObservation = {
        resolver: raw.resolver,
        values: [...new Set(records.map(presentValue))].sort(),
      };
      if (cnameRecord && type !== 'CNAME') obs.cname = presentValue(cnameRecord);
      return obs;
    }),
  );
}

/** Runs tasks with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

export function createDnsActivities(deps: DnsDeps) {
  return {
    /** The NS set each resolver sees for the domain (the parent's delegation). */
    async lookupNameservers(domain: string): Promise<ResolverObservation[]> {
      return observe(deps, domain, 'NS', { authorityFallback: true });
    },

    /** Looks for the ssl_delegation CNAME, then the verification TXT; says what was seen when neither is there. */
    async lookupVerification(input: {
      verification: VerificationBlock | null;
      sslDelegation: SslDelegationBlock | null;
    }): Promise<{ found: 'cname' | 'txt' | null; seen: string }> {
      const seen: string[] = [];
      const d = input.sslDelegation;
      if (d?.name && d.target) {
        const obs = await observe(deps, d.name, 'CNAME');
        const targets = [...new Set(obs.flatMap((o) => o.values))];
        if (targets.includes(norm(d.target))) return { found: 'cname', seen: `CNAME ${d.name} → ${norm(d.target)}` };
        seen.push(
          targets.length
            ? `CNAME ${d.name} points at ${targets.join(', ')}, expected ${norm(d.target)}`
            : `no CNAME at ${d.name}`,
        );
      }
      const v = input.verification;
      if (v?.name && v.value) {
        const obs = await observe(deps, v.name, 'TXT');
        const values = [...new Set(obs.flatMap((o) => o.values))];
        if (values.includes(v.value)) return { found: 'txt', seen: `TXT ${v.name} "${v.value}"` };
        seen.push(
          values.length
            ? `TXT at ${v.name} holds ${values.map((x) => `"${x}"`).join(', ')}, not the verification token`
            : `no TXT record at ${v.name}`,
        );
      }
      return { found: null, seen: seen.join('; ') || 'nothing to check' };
    },

    /**
     * The ssl_delegation check: every resolver must see the domain's own canary in the TXT at
     * _acme-challenge.<domain> (reached through the CNAME to our delegation target).
     */
    async checkAcmeDelegation(input: {
      domain: string;
      target: string;
      canary: string;
      delegationZone: string;
    }): Promise<{ ok: boolean; error?: string }> {
      return judgeAcmeDelegation(await observe(deps, `_acme-challenge.${input.domain}`, 'TXT'), input);
    },

    /** Asks the common labels and types of a zone; a label with a CNAME holds nothing else. */
    async scanZone(domain: string, labels: string[] = SCAN_LABELS): Promise<ScannedRecord[]> {
      const found: ScannedRecord[] = [];
      const first = async (name: string, type: string) => {
        for (const r of deps.resolvers) {
          const raw = await ask(deps, r, name, type);
          if (!raw.error && (raw.rcode === 0 || raw.rcode === 3)) return raw;
        }
        return undefined;
      };
      await pool(labels, 8, async (label) => {
        const fqdn = label === '@' ? domain : `${label}.${domain}`;
        for (const type of SCAN_TYPES) {
          if (label === '@' && type === 'CNAME') continue;
          if (label === '@' && type === 'NS') continue; // the apex NS set becomes ours
          const raw = await first(fqdn, type);
          if (!raw || raw.rcode === 3) break; // NXDOMAIN: nothing at this label
          const typeCode = DNS.Packet.TYPE[type];
          const own = raw.answers.filter((a) => a.type === typeCode && norm(a.name) === fqdn);
          for (const a of own) found.push(scannedRecord(label, type, a));
          if (type === 'CNAME' && own.length > 0) break;
        }
      });
      const key = (r: ScannedRecord) => `${r.name}\u0000${r.type}\u0000${r.destination}`;
      return [...new Map(found.map((r) => [key(r), r])).values()].sort((a, b) => key(a).localeCompare(key(b)));
    },
  };
}

/** Judges what the resolvers saw at _acme-challenge (pure, so it is table-tested). */
export function judgeAcmeDelegation(
  obs: ResolverObservation[],
  input: { domain: string; target: string; canary: string; delegationZone: string },
): { ok: boolean; error?: string } {
  const label = `_acme-challenge.${input.domain}`;
  const target = norm(input.target);
  const zone = norm(input.delegationZone);
  const good = obs.filter((o) => o.values.includes(input.canary) && (!o.cname || o.cname === target));
  if (obs.length > 0 && good.length === obs.length) return { ok: true };
  const foreign = obs.find((o) => o.cname && o.cname !== target && (o.cname === zone || o.cname.endsWith(`.${zone}`)));
  if (foreign)
    return {
      ok: false,
      error: `${label} points at ${foreign.cname}, the delegation of another domain; expected ${target}`,
    };
  if (good.length > 0)
    return {
      ok: false,
      error: `not propagated yet: ${good.length} of ${obs.length} resolvers see the delegation of ${label}`,
    };
  const elsewhere = obs.find((o) => o.cname && o.cname !== target);
  if (elsewhere) return { ok: false, error: `${label} is a CNAME to ${elsewhere.cname}, expected ${target}` };
  const other = obs.find((o) => o.values.length > 0);
  if (other)
    return {
      ok: false,
      error: `TXT at ${label} holds ${other.values.map((v) => `"${v}"`).join(', ')}, not this domain's canary (is the CNAME to ${target} in place?)`,
    };
  return { ok: false, error: `no record at ${label}: add a CNAME to ${target}` };
}
