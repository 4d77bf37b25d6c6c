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
