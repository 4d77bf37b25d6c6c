// Type-only contracts between workflows, activities and the control plane's /internal API (safe for workflow code).

/** What one resolver answered for a name and type. */
export interface ResolverObservation {
  resolver: string;
  /** Values in presentation form, lower-cased names without the trailing dot; TXT strings joined. */
  values: string[];
  /** For a CNAME seen on the way (e.g. _acme-challenge → target), its target. */
  cname?: string;
  /** Set when the resolver did not answer usefully: timeout, SERVFAIL, NXDOMAIN. */
  error?: string;
}

/** The result of a nameserver check, as POST /domains/{domain}/check-ns answers it (NsCheckResult). */
export interface NsCheckResult {
  ok: boolean;
  state: string;
  nameservers: string[];
  expected: string[][];
  matched_set: number | null;
  error?: string;
  checked_at: string;
}

export interface VerifyResult {
  verified: boolean;
  method?: 'cname' | 'txt';
  state: string;
  error?: string;
}

export interface DelegationCheckResult {
  ok: boolean;
  error?: string;
  state?: string;
}

/** A record found by the zone scan, in the shape of the records API (name relative, '@' apex). */
export interface ScannedRecord {
  name: string;
  type: string;
  destination: string;
  ttl: number;
  mx_priority?: number;
}

/** One nameserver address an import scan asked (or did not) for a zone transfer, and what came of it. */
export interface ScanNameserver {
  name: string;
  address?: string;
  result: string;
}

/** What an import scan has done so far (the control plane keeps it on the session; GET shows it). */
export interface ScanProgress {
  phase: 'queued' | 'nameservers' | 'axfr' | 'labels' | 'planning' | 'done';
  method?: 'axfr' | 'labels';
  nameservers?: ScanNameserver[];
  labels_total?: number;
  labels_done?: number;
  found?: number;
}

export interface VerificationBlock {
  name: string;
  type: string;
  value: string;
  expires_at?: string;
}
export interface SslDelegationBlock {
  name: string;
  type: string;
  target: string;
  canary?: string;
}

/** Backoff of a background check: first interval, doubling up to the maximum, until giving up. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
  giveUpAfterMs: number;
}

/** What the control plane wants issued for a domain now (POST /internal/domains/{domain}/acme/plan). */
export interface AcmePlan {
  /** ACME directory of this environment; '' when issuance is not configured (ACME_DIRECTORY_URL unset). */
  directory_url: string;
  /** Contact address given to the CA when the account is made; '' for none. */
  email: string;
  /** Names the certificate must cover (apex and wildcard of a managed domain, names beyond one label); [] none. */
  hostnames: string[];
  /** Why nothing is issued when hostnames is empty (domain not active, external DNS, no proxied record…). */
  reason?: string;
  /** The issued certificate the edge serves now, if any. */
  current: { hostnames: string[]; not_before: string; not_after: string } | null;
  /** A manual POST ssl/issue is waiting for an order. */
  manual: boolean;
  /**
   * Where the dns-01 TXTs go: the domain's own zone (managed), the ACME delegation zone its `_acme-challenge` CNAME
   * points into (external), or the domain's acme-dns account; or `http-01`: key authorizations answered by our edge
   * nodes (an external domain without the CNAME, control-plane/src/internal/acme-http01.ts). Absent: zone.
   */
  challenge?: 'zone' | 'delegation' | 'acme-dns' | 'http-01';
  /** For `delegation`: the CNAME target and canary, checked through public resolvers before an order is made. */
  delegation?: { target: string; canary: string; zone: string };
  /** For `acme-dns`: the account's `fulldomain`, the `_acme-challenge` CNAME target checked first (when known). */
  acme_dns?: { fulldomain: string | null };
}

/** Where published challenges can be seen: on our DNS nodes (names there), or through public resolvers. */
export interface PublishedChallenges {
  published: number;
  /** Names and values to wait for; absent (an older control plane): the challenges' own names on our nodes. */
  watch?: Array<{ name: string; value: string }>;
  via?: 'nodes' | 'resolvers';
}

export type AcmeChallengeType = 'dns-01' | 'http-01';

export interface AcmeOrderInput {
  directoryUrl: string;
  email?: string;
  hostnames: string[];
  /** The challenge answered for each authorization (absent: dns-01). */
  challengeType?: AcmeChallengeType;
}

/** One challenge of an order: dns-01 (where the TXT goes and what it holds) or http-01 (token, key authorization). */
export interface AcmeChallenge {
  /** Absent: dns-01. */
  type?: AcmeChallengeType;
  /** The authorization's name (`*.example.org` for a wildcard). */
  identifier: string;
  /** dns-01: `_acme-challenge.<name>` (a wildcard's is its base name's); http-01: the name itself. */
  name: string;
  /** dns-01: the TXT value; http-01: the key authorization the edge answers. */
  value: string;
  /** http-01: the token in /.well-known/acme-challenge/<token>. */
  token?: string;
  challengeUrl: string;
  authorizationUrl: string;
}

/** An order as the workflow keeps it between steps (URLs only; no key). */
export interface AcmeOrder {
  url: string;
  finalize: string;
  hostnames: string[];
  challenges: AcmeChallenge[];
}

export interface IssuedCertificate {
  id: number;
  notBeforeMs: number;
  notAfterMs: number;
  hostnames: string[];
}

/** An order's outcome as reported to the control plane (it keeps what GET ssl/ shows). */
export interface AcmeAttemptReport {
  status: 'pending' | 'issued' | 'failed';
  hostnames: string[];
  error?: string;
  /** When the workflow tries again after a failure (epoch ms). */
  next_retry_at_ms?: number;
}
