// The whole security pipeline of issue 13, one rule of every type on one domain, shared by the in-process benchmark
// (security-pipeline.bench.ts) and the wrk run (wrk-setup.ts, wrk.sh's "every security type" row): the WAF at
// paranoia 1, a rate_limit that is never reached, a bot_route rule, a fingerprint rule of 100 values, 20 custom rules,
// a captcha rule on a path the request does not take and an optimize rule (compression), Under Attack Mode off. The
// request is a browser's GET with a query that looks dangerous to a naive filter: every rule is evaluated and none
// acts, so the answer is the origin's.
import type { Rule } from '@platform/shared/config';
import { make } from './rule-gen.js';

/** The request of the pipeline rows: the WAF row's benign look-alike. */
export const SECURITY_PATH = '/search?q=select+a+plan&name=O%27Brien';

/**
 * A browser's headers, as wrk sends them with -H (Host comes first): classified `human` by bot_route (score 79: no
 * Accept-Encoding, so the optimize rule is consulted and compresses nothing, as for wrk on nginx's gzip).
 */
export const SECURITY_HEADERS: [string, string][] = [
  ['user-agent', 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'],
  ['accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
  ['accept-language', 'en-GB,en;q=0.5'],
  ['sec-fetch-mode', 'navigate'],
];

const cidrs = Array.from({ length: 50 }, (_, i) => `203.0.${i}.0/24`).join(' ');

/**
 * 20 custom-rule expressions, a realistic mix (wildcards, CIDR lists, header tests, len/lower, 2 RE2 regexes) that
 * neither the custom-rules benchmark's requests nor SECURITY_PATH match: every one runs.
 */
export const CUSTOM_EXPRESSIONS = [
  'http.request.uri.path wildcard "/admin/*" and not ip.src in {10.0.0.0/8 192.168.0.0/16}',
  'http.user_agent contains "sqlmap"',
  'lower(http.user_agent) matches "^(curl|wget|python-requests)/"',
  'http.request.uri.query matches "(?i)union.+select"',
  `ip.src in {${cidrs}}`,
  'http.request.method in {"PUT" "DELETE" "PATCH"} and not http.request.uri.path wildcard "/api/*"',
  'len(http.request.uri.query) gt 1024',
  'http.request.uri.path eq "/wp-login.php" or http.request.uri.path eq "/xmlrpc.php"',
  'http.referer contains "spam.example"',
  'http.request.headers["x-api-key"] eq "" and http.request.uri.path wildcard "/api/*"',
  ...Array.from({ length: 10 }, (_, i) =>
    i % 2 === 0
      ? `http.request.uri.path strict wildcard "/p${i}/*.php" and not ssl`
      : `http.cookie contains "banned${i}=" or http.request.headers["x-bad-${i}"] ne ""`,
  ),
];

/** Custom rules of `expressions`, ids from `firstId`, priorities from 10. */
export function customRules(expressions: string[], firstId: number, action = 'block'): Rule[] {
  return expressions.map((expression, i) => make(firstId + i, 'custom', { expression, action, priority: 10 + i }));
}

/** 100 JA4H-style values no browser sends (part b is a counter). */
export const FINGERPRINTS = Array.from(
  { length: 100 },
  (_, i) => `ge11nn05enus_${i.toString(16).padStart(12, '0')}_000000000000_000000000000`,
);

/** One rule of every security type (ids from `firstId`); Under Attack Mode and the record's captcha flag stay off. */
export function everySecurityType(firstId = 900_000): Rule[] {
  return [
    make(firstId, 'waf', { priority: 1000, paranoia_level: 1, anomaly_threshold: 5 }),
    // 1,000,000 a second from one address: never reached, but every request is counted.
    make(firstId + 1, 'rate_limit', { requests: 1_000_000, period_s: 1, key: 'ip', block_s: 60 }),
    make(firstId + 2, 'bot_route', { classes: ['ai_crawler', 'automation', 'unverified_crawler'], action: 'block' }),
    make(firstId + 3, 'fingerprint', { fingerprints: FINGERPRINTS, action: 'block' }),
    make(firstId + 4, 'captcha', { path_includes: ['/login', '/account/*'] }),
    make(firstId + 5, 'optimize', { compression: ['br', 'gzip'] }),
    ...customRules(CUSTOM_EXPRESSIONS, firstId + 100),
  ];
}
