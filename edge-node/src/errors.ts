// Error codes of the edge node. Hot paths return results, not exceptions: a code names why the edge itself answered,
// and is sent as the `x-edge-error` header of that answer (and kept in the request log as the status).
export const EDGE_ERRORS = {
  EDGE_ERR_HOST_NOT_SERVED: 421, // no served domain, no record, record not proxied, domain disabled or banned
  EDGE_ERR_UPSTREAM_UNREACHABLE: 502, // connection refused or reset, TLS failure, every pool origin down
  EDGE_ERR_ORIGIN_REFUSED: 502, // the origin's address is loopback, private, link-local, … or the platform's own
  EDGE_ERR_ORIGIN_CERTIFICATE: 526, // an https origin's certificate does not verify (untrusted, expired, wrong name)
  EDGE_ERR_UPSTREAM_TIMEOUT: 504, // no response head within the record's timeout
  EDGE_ERR_WAF_BLOCKED: 403, // a waf rule in enforce mode scored the request at or over its anomaly threshold
  EDGE_ERR_INTERNAL: 502, // an unexpected failure in the phases (logged with the request)
} as const;

export type EdgeErrorCode = keyof typeof EDGE_ERRORS;
