// TypeScript shapes of the compiled-config protobuf messages (shared/proto/compiled-config.proto), camelCase as protobufjs maps them.

/** Major version of the compiled-config schema; readers reject snapshots with another major. */
export const SCHEMA_MAJOR = 1;

/**
 * One config log entry as streamed to nodes: a whole domain snapshot, a delta (`delta` true), or a tombstone
 * (`deleted`). A delta's snapshot carries every domain-level field whole, but `zone.records` and `ruleSet.rules`
 * hold only the records and rules the change wrote; `removedRecordIds` and `removedRuleIds` list what it removed.
 * A delta applies on top of the domain's state after its previous entry.
 */
export interface ConfigEntry {
  /** Config log version, strictly increasing across all domains. */
  version: number;
  /** Punycode, lower case, no trailing dot. */
  domain: string;
  deleted: boolean;
  /** Absent when deleted. */
  snapshot?: DomainSnapshot;
  /** True when `snapshot` is a delta (absent or false: it replaces the domain whole). */
  delta?: boolean;
  removedRecordIds?: number[];
  removedRuleIds?: number[];
}

export interface DomainSnapshot {
  schemaMajor: number;
  domainId: number;
  name: string;
  state: string;
  dnsMode: string;
  zone: Zone;
  settings: DomainSettings;
  ruleSet: RuleSet;
  certificates: Certificate[];
  /** ACME http-01 challenges of orders in progress (absent or empty: none); decoded snapshots always carry the list. */
  acmeHttpChallenges?: AcmeHttpChallenge[];
  /** Online signing of the managed zone (absent, null or not enabled: unsigned). */
  dnssec?: Dnssec | null;
  /** Zone transfers out: secondaries and their TSIG keys (absent or null: none). */
  transfers?: ZoneTransfers | null;
}

export interface ZoneTransfers {
  secondaries: Secondary[];
  tsigKeys: TsigKey[];
}

export interface Secondary {
  /** IP literal: NOTIFY goes there, AXFR/IXFR is allowed from it. */
  address: string;
  /** NOTIFY port. */
  port: number;
  /** Name of a key in tsigKeys; '' for none. */
  tsigKey: string;
}

export interface TsigKey {
  name: string;
  /** hmac-sha256. */
  algorithm: string;
  /** sealTsigSecret(...); empty: use `secret`. */
  secretSealed: Uint8Array;
  /** Plain secret, accepted from tests and local tools; the control plane leaves it empty. */
  secret: Uint8Array;
}

/** DNSSEC keys of a zone, signed online by the DNS nodes (dns-server/src/dnssec/). */
export interface Dnssec {
  enabled: boolean;
  keys: DnssecKey[];
}

export interface DnssecKey {
  /** 257: key-signing key; 256: zone-signing key. */
  flags: number;
  /** 13: ECDSA P-256 with SHA-256. */
  algorithm: number;
  /** The DNSKEY public key field (x || y). */
  publicKey: Uint8Array;
  /** PKCS#8 DER sealed for nodes (sealDnssecKey); empty: use privateKeyDer. */
  privateKeySealed: Uint8Array;
  /** Plain PKCS#8 DER, accepted from tests and local tools; the control plane leaves it empty. */
  privateKeyDer: Uint8Array;
  /** In the DNSKEY RRset. */
  published: boolean;
  /** Signs: a ZSK every RRset, a KSK the DNSKEY, CDS and CDNSKEY RRsets. */
  signing: boolean;
  /** A KSK named by CDS/CDNSKEY. */
  cds: boolean;
}

/** What the edge answers at `http://<hostname>/.well-known/acme-challenge/<token>` while an order validates. */
export interface AcmeHttpChallenge {
  hostname: string;
  token: string;
  keyAuthorization: string;
}

export interface Zone {
  /** Increases with every change of the domain. */
  serial: number;
  nameservers: string[];
  soaMname: string;
  soaRname: string;
  soaRefresh: number;
  soaRetry: number;
  soaExpire: number;
  soaMinimum: number;
  soaTtl: number;
  records: ZoneRecord[];
}

export interface ZoneRecord {
  id: number;
  /** Relative owner name, lower case: "@" is the apex, "www", "*.dev". */
  name: string;
  type: string;
  /** Presentation form of the RDATA (MX: exchange only; SRV: "weight port target"; CAA: "flags tag value"). */
  destination: string;
  ttl: number;
  /** MX preference, SRV priority. */
  mxPriority: number;
  proxied: boolean;
  captcha: boolean;
  scheme: string;
  port: number;
  hostHeader: string;
  hostHeaderMode: string;
  timeout: number;
  /** Uptime whole-host watch on this name (absent in snapshots written before it existed: false). */
  monitor?: boolean;
}

export interface DomainSettings {
  developerMode: boolean;
  developerModeExpiresAtMs: number;
  cacheL2TtlDays: number;
  cacheCapMb: number;
  /** Bumped by a cache purge; nodes drop the domain's cache when it changes (0 when never purged). */
  cachePurgeGeneration?: number;
  /** Recent selective purges, oldest first: entries whose key (host + path) starts with a prefix are dropped once. */
  cachePurges?: CachePurge[];
  /** auto, http1, http2 or http3: the highest HTTP version the edge offers the domain's origins ("" or absent: auto). */
  originProtocol?: string;
  /** Under Attack Mode: every request of the domain gets the challenge unless it holds a clearance. */
  underAttack?: boolean;
  /** The domain's uptime watch: what the edge probes when traffic is too thin (absent or null: nothing watched). */
  uptime?: UptimeWatch | null;
  /** The domain's own pages for answers the edge makes (custom-pages.ts); absent or empty: the edge's defaults. */
  customPages?: CustomPage[];
}

/** A page the edge makes, in the domain's HTML: `kind` one of CUSTOM_PAGE_KINDS. */
export interface CustomPage {
  kind: string;
  html: string;
}

export interface UptimeWatch {
  /** A minute with fewer proxied requests than this is too thin to judge on traffic alone. */
  minRequestsPerMinute: number;
  /** Enabled path monitors of the domain. */
  monitors: UptimeMonitorScope[];
}

/** An enabled uptime monitor's scope, as stored (control-plane/src/areas/uptime/monitor.ts MonitorScope). */
export interface UptimeMonitorScope {
  id: number;
  hostMatchType: string;
  hostIncludes: string[];
  hostExcludes: string[];
  pathMatchType: string;
  pathIncludes: string[];
  pathExcludes: string[];
}

export interface CachePurge {
  id: number;
  prefixes: string[];
  /** A refresh: matching entries are marked stale (the next request revalidates them with the origin), not dropped. */
  refresh?: boolean;
}

export interface RuleSet {
  version: number;
  rules: Rule[];
}

export interface Rule {
  id: number;
  type: string;
  enabled: boolean;
  priority: number;
  /** Type-specific compiled fields (msgpack), owned by the edge rule engine. */
  body: Uint8Array;
}

/**
 * A certificate the edge serves for `hostnames` (exact names and `*.` wildcards; the edge prefers an exact name).
 * The control plane sends the private key only sealed (`privateKeySealed`, cert-seal.ts: AES-256-GCM under a key
 * derived from the node token, bound to the domain and the PEM) and leaves `privateKeyPem` empty; a plain
 * `privateKeyPem` is accepted from tests and local tools.
 */
export interface Certificate {
  hostnames: string[];
  /** Leaf first, then its intermediates, in order. */
  certificatePem: string;
  privateKeyPem: string;
  notAfterMs: number;
  /** sealCertificateKey(...) of the private key PEM; empty or absent: use privateKeyPem. */
  privateKeySealed?: Uint8Array;
}
