// What the account-wide reads (GET /analytics/...) and the per-domain reads of account-read-routes.ts ask of the
// store beyond reads.ts: groups by one or two columns, traffic per bucket with its billable and origin parts,
// proxy-like clients, series per value of a column, and the rows with WAF findings. Every one takes a list of domains
// (the caller's, or the one domain of a per-domain read) and fixed statements with bound values.
import type { UnservedReason } from '@platform/shared/types';
import { DIMENSIONS } from './reads.js';

/**
 * Columns the account reads group by: the top-N dimensions, the domain, and the status class (2xx, 4xx, …; the
 * status divided by 100).
 */
export const GROUP_DIMENSIONS = [...DIMENSIONS, 'domain_id', 'status_class'] as const;
export type GroupDimension = (typeof GROUP_DIMENSIONS)[number];

/** Dimensions of "behaviour over time": the ones with few values (a point per value and bucket). */
export const BEHAVIOUR_DIMENSIONS = ['status_class', 'status', 'cache_status', 'method', 'node', 'bot_class'] as const;
export type BehaviourDimension = (typeof BEHAVIOUR_DIMENSIONS)[number];

/**
 * Why the edge answered itself (unserved_reason) when that answer is not billed: refusals on a security rule of its
 * own (blocks, drops, rate limits, challenges issued or failed, throttled logins) and the platform's ACME answers are
 * not the customer's traffic (docs/decisions.md "Billable traffic").
 */
export const UNBILLED_REASONS = [
  'drop',
  'custom_block',
  'fingerprint_block',
  'bot_block',
  'rate_limited',
  'challenge_issued',
  'challenge_failed',
  'waf_block',
  'auth_throttled',
  'acme_challenge',
] as const satisfies readonly UnservedReason[];

/**
 * For rows logged before the edge said why it answered (serving_path ''): rule types whose enforced hit on a refused
 * request (status 400 and up) makes it unbilled.
 */
export const SECURITY_RULE_TYPES = [
  'drop',
  'waf',
  'rate_limit',
  'captcha',
  'under_attack',
  'fingerprint',
  'bot_route',
  'custom',
] as const;

/** Domains with logs an account read covers at most on DuckDB (each is a branch of the statement's union). */
export const MAX_ACCOUNT_DOMAINS = 1000;

/** Requests, bytes and visitors per combination of values. */
export interface GroupItem {
  values: (string | number)[];
  requests: number;
  bytes: number;
  /** Distinct client addresses. */
  visitors: number;
}

/** One bucket of traffic: all bytes sent to clients, the billable part, the part of requests passed to the origin. */
export interface TrafficBucket {
  bucket: number;
  requests: number;
  bytes: number;
  billableRequests: number;
  billableBytes: number;
  originRequests: number;
  /** Bytes sent to the clients of the requests passed to the origin. */
  originBytes: number;
  /** Body bytes received from the origin (origin_bytes). */
  originFetchedBytes: number;
  cachedBytes: number;
}

/** A client address whose traffic looks like many clients behind one address. */
export interface ProxyClient {
  clientIp: string;
  requests: number;
  bytes: number;
  /** Distinct non-empty fingerprints (client stacks) seen from it. */
  fingerprints: number;
  /** Distinct domains it reached. */
  domains: number;
  /** Distinct bot classes ('' excluded). */
  botClasses: number;
}

/** Requests and bytes of one value of a column in one bucket. */
export interface ValueBucket {
  bucket: number;
  value: string | number;
  requests: number;
  bytes: number;
}
