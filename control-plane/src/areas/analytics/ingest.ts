// Request log records into the analytics store: each record's host resolved to its domain and owner (the longest
// registered name the host ends with), through a bounded cache; records of hosts no domain covers are not kept.
import type { FastifyInstance } from 'fastify';
import { inArray } from 'drizzle-orm';
import type { Db } from '../../db/index.js';
import { domains } from '../../db/schema.js';
import { SERVING_PATHS, UA_CATEGORIES, UNSERVED_REASONS } from '@platform/shared/types';
import { lookupClient, type ClientNetwork } from './geo.js';
import type { AppliedBatch, LaterFields, LogRow } from './store.js';

export interface HostDomain {
  id: number;
  ownerId: number;
  name: string;
}

/** Labels of a host tried as a domain name: domains deeper than this are not matched. */
const MAX_DOMAIN_LABELS = 10;
const LOOKUP_CHUNK = 1000;

/** The host → domain lookup, cached with a time to live (a domain added is found within it) and a size bound. */
export class HostDomainCache {
  private readonly cache = new Map<string, { at: number; domain: HostDomain | null }>();

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 60_000,
    private readonly max = 20_000,
  ) {}

  async resolve(hosts: Iterable<string>, now = Date.now()): Promise<Map<string, HostDomain | null>> {
    const out = new Map<string, HostDomain | null>();
    const missing: string[] = [];
    for (const host of hosts) {
      if (out.has(host)) continue;
      const hit = this.cache.get(host);
      if (hit && now - hit.at < this.ttlMs) out.set(host, hit.domain);
      else {
        out.set(host, null);
        missing.push(host);
      }
    }
    if (missing.length === 0) return out;
    const names = new Set<string>();
    for (const host of missing) for (const s of suffixes(host)) names.add(s);
    const found = new Map<string, HostDomain>();
    const all = [...names];
    for (let i = 0; i < all.length; i += LOOKUP_CHUNK) {
      const rows = await this.db
        .select({ id: domains.id, ownerId: domains.ownerId, name: domains.name })
        .from(domains)
        .where(inArray(domains.name, all.slice(i, i + LOOKUP_CHUNK)));
      for (const r of rows) found.set(r.name, r);
    }
    for (const host of missing) {
      const domain =
        suffixes(host)
          .map((s) => found.get(s))
          .find((d) => d !== undefined) ?? null;
      out.set(host, domain);
      if (this.cache.size >= this.max) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(host, { at: now, domain });
    }
    return out;
  }

  /** Drops the cached hosts of a deleted domain. */
  forget(domainId: number): void {
    for (const [host, v] of this.cache) if (v.domain?.id === domainId) this.cache.delete(host);
  }
}

/** The names a host may belong to, longest first: www.a.example.org → www.a.example.org, a.example.org, example.org. */
function suffixes(host: string): string[] {
  const labels = host.toLowerCase().replace(/\.$/, '').split('.');
  const out: string[] = [];
  for (let i = Math.max(0, labels.length - MAX_DOMAIN_LABELS); i < labels.length - 1; i++)
    out.push(labels.slice(i).join('.'));
  return out;
}

/** A record as POST /internal/request-logs has typed and bounded it (the request_logs row it inserts). */
export interface IngestedRecord {
  at: Date;
  node: string;
  host: string;
  path: string;
  method: string;
  status: number;
  bytes: number;
  cacheStatus: string;
  ruleHits: unknown;
  wafEvents: LogRow['wafEvents'];
  fingerprint: string;
  botScore: number;
  botClass: string;
  durationMs: number;
  upstreamMs: number;
  clientIp: string;
  /** The later fields (shippedFields); absent in records of an older edge or sent by hand. */
  fields?: ShippedFields;
}

/**
 * The request-log fields an edge ships beyond the first set (edge-node/src/log/buffer.ts), typed and bounded: the later
 * fields but the client's network, which ingest looks up (geo.ts).
 */
export type ShippedFields = Omit<LaterFields, keyof ClientNetwork>;

const TLS_VERSIONS = ['none', 'TLS', 'TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];
const HTTP_PROTOCOLS = ['HTTP/1.0', 'HTTP/1.1', 'HTTP/2', 'HTTP/3'];
const MAX_RATE_LIMIT_KEY = 256;
const oneOf = (v: unknown, allowed: readonly string[]): string =>
  typeof v === 'string' && allowed.includes(v) ? v : '';

/** The later fields as an edge ships them (edge-node/src/log/buffer.ts), unchecked; absent from older edges. */
export interface ShippedLater {
  tls?: unknown;
  proto?: unknown;
  ua?: unknown;
  served?: unknown;
  unserved?: unknown;
  originBytes?: unknown;
  md?: unknown;
  rlRule?: unknown;
  rlKey?: unknown;
}

/** A shipped record's later fields: a value outside its known set is '' (unknown), a number outside its range 0. */
export function shippedFields(r: ShippedLater): ShippedFields {
  const rule = Number.isSafeInteger(r.rlRule) && (r.rlRule as number) > 0 ? int32(r.rlRule as number) : 0;
  return {
    tlsVersion: oneOf(r.tls, TLS_VERSIONS),
    httpProtocol: oneOf(r.proto, HTTP_PROTOCOLS),
    uaCategory: oneOf(r.ua, UA_CATEGORIES),
    servingPath: oneOf(r.served, SERVING_PATHS),
    unservedReason: oneOf(r.unserved, UNSERVED_REASONS),
    originBytes: Number.isSafeInteger(r.originBytes) && (r.originBytes as number) > 0 ? (r.originBytes as number) : 0,
    markdown: r.md === true,
    rateLimitRule: rule,
    rateLimitKey: rule !== 0 && typeof r.rlKey === 'string' ? r.rlKey.slice(0, MAX_RATE_LIMIT_KEY) : '',
  };
}

const NO_FIELDS: ShippedFields = Object.freeze(shippedFields({}));
/** Distinct client addresses looked up per shipment at most; the rest are unknown (a batch holds 5,000 records). */
const MAX_LOOKUPS = 20_000;

const MAX_RULE_HITS = 32;

const int32 = (v: number): number => (Number.isInteger(v) && Math.abs(v) <= 2_147_483_647 ? v : 0);

/** Rule hits as [integer id, type of at most 32 characters, boolean]; anything else a node sends is dropped. */
function ruleHits(v: unknown): LogRow['ruleHits'] {
  if (!Array.isArray(v)) return [];
  const out: LogRow['ruleHits'] = [];
  for (const h of v.slice(0, MAX_RULE_HITS)) {
    if (!Array.isArray(h) || !Number.isSafeInteger(h[0]) || typeof h[1] !== 'string') continue;
    out.push([int32(h[0] as number), h[1].slice(0, 32), h[2] === true]);
  }
  return out;
}

/**
 * Appends a shipment's records to the analytics store; returns how many had a domain. With a batch id the append is
 * idempotent (the store records the id with the rows) and a failure is thrown: the node keeps the batch and sends it
 * again. Without one (a shipment by hand) a failure is logged, not thrown: a retry would store it twice elsewhere.
 */
export async function appendRequestLogs(
  app: FastifyInstance,
  records: IngestedRecord[],
  batch?: AppliedBatch,
): Promise<number> {
  if (batch) return appendRows(app, records, batch);
  try {
    return await appendRows(app, records);
  } catch (err) {
    app.log.warn({ err }, 'request logs not stored in the analytics store');
    return 0;
  }
}

async function appendRows(app: FastifyInstance, records: IngestedRecord[], batch?: AppliedBatch): Promise<number> {
  if (records.length === 0) return 0;
  const byHost = await app.analytics.hosts.resolve(records.map((r) => r.host));
  const rows: LogRow[] = [];
  const networks = new Map<string, ClientNetwork>();
  const network = (ip: string): ClientNetwork => {
    let n = networks.get(ip);
    if (n === undefined) {
      n = networks.size < MAX_LOOKUPS ? lookupClient(ip) : lookupClient('');
      networks.set(ip, n);
    }
    return n;
  };
  for (const r of records) {
    const domain = byHost.get(r.host);
    if (!domain || Number.isNaN(r.at.getTime())) continue;
    rows.push({
      time: r.at,
      domainId: domain.id,
      ownerId: domain.ownerId,
      node: r.node,
      host: r.host,
      path: r.path,
      method: r.method,
      status: int32(r.status),
      bytes: Number.isSafeInteger(r.bytes) && r.bytes >= 0 ? r.bytes : 0,
      cacheStatus: r.cacheStatus.slice(0, 32),
      ruleHits: ruleHits(r.ruleHits),
      wafEvents: r.wafEvents,
      durationMs: Number.isFinite(r.durationMs) ? r.durationMs : 0,
      upstreamMs: Number.isFinite(r.upstreamMs) ? r.upstreamMs : 0,
      clientIp: r.clientIp.slice(0, 64),
      fingerprint: r.fingerprint,
      botScore: r.botScore,
      botClass: r.botClass,
      ...(r.fields ?? NO_FIELDS),
      ...network(r.clientIp.slice(0, 64)),
    });
  }
  await app.analytics.store.append(rows, batch);
  return rows.length;
}
