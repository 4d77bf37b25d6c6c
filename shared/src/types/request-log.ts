// Values of the request-log fields the edge fills and the control plane stores (analytics `logs` columns): the edge
// ships one of these, the control plane keeps only a listed value ('' otherwise).

/** What a user agent says of itself (edge-node/src/log/ua-category.ts). */
export const UA_CATEGORIES = ['browser', 'mobile', 'crawler', 'ai_crawler', 'library', 'empty', 'other'] as const;
export type UaCategory = (typeof UA_CATEGORIES)[number];

/** Where the answer came from: the edge's cache, the origin, or the edge itself (a refusal, a redirect, an error). */
export const SERVING_PATHS = ['cache', 'origin', 'edge'] as const;
export type ServingPath = (typeof SERVING_PATHS)[number];

/**
 * Why the origin did not answer (the edge answered, or refused the request); a request the origin or the cache
 * answered has none ('').
 */
export const UNSERVED_REASONS = [
  'host_not_served',
  'acme_challenge',
  'drop',
  'custom_block',
  'fingerprint_block',
  'bot_block',
  'rate_limited',
  'challenge_issued',
  'challenge_passed',
  'challenge_failed',
  'waf_block',
  'auth_required',
  'auth_throttled',
  'auth_denied',
  'sso_sign_in',
  'redirect',
  'origin_unreachable',
  'origin_timeout',
  'origin_refused',
  'origin_certificate',
  'stale_on_origin_error',
  'client_aborted',
  'edge_error',
] as const;
export type UnservedReason = (typeof UNSERVED_REASONS)[number];
