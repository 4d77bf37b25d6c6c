// One RequestContext per request: everything read from uWS synchronously, plus what the phases decide on the way.
import type { PeerAddress } from '@platform/shared/match';
import type { ZoneRecord } from '@platform/shared/config';
import type { UnservedReason } from '@platform/shared/types';
import type { OriginTarget } from './proxy/origin.js';
import type { OriginRouteAction } from './rules/origin-route.js';
import type { CustomPages } from './custom-pages.js';

/** `/a/b` → `/a`; `/a` → `/a`: the first path segment, which rules are bucketed by. */
export function firstSegment(path: string): string {
  const i = path.indexOf('/', 1);
  return i < 0 ? path : path.slice(0, i);
}

/** A rule that matched: `dry` when it ran in dry_run mode (would have acted, the request passed unchanged). */
export interface RuleHit {
  id: number;
  type: string;
  dry: boolean;
}

/** One WAF finding of a request: the edge rule that ran, the managed rule, phase, where, what (truncated), action. */
export interface WafEvent {
  ruleId: number;
  wafRule: string;
  phase: 1 | 2;
  target: string;
  data: string;
  /** `block`: the request was refused for this score; `log`: dry run, or below the threshold. */
  action: 'block' | 'log';
}

/** The hit list of a request no rule matched (never written: RequestContext.hit makes a list of its own). */
const NO_HITS: RuleHit[] = Object.freeze([]) as unknown as RuleHit[];

/**
 * One RuleHit per rule and dry flag, shared by every request it matches (never modified): the request log keeps hits
 * for thousands of requests, and one object per request would be copied into the old generation each time.
 */
const HITS = new Map<number, RuleHit>();
const DRY_HITS = new Map<number, RuleHit>();
/** Rules remembered at most (ids of rules no longer in any config are forgotten when it is full). */
const HITS_MAX = 65_536;

function ruleHit(id: number, type: string, dry: boolean): RuleHit {
  const map = dry ? DRY_HITS : HITS;
  const known = map.get(id);
  if (known !== undefined && known.type === type) return known;
  if (map.size >= HITS_MAX) map.clear();
  const made: RuleHit = Object.freeze({ id, type, dry });
  map.set(id, made);
  return made;
}

export type CacheStatus = '' | 'HIT' | 'MISS' | 'STALE' | 'BYPASS' | 'EXPIRED' | 'DYNAMIC';

export class RequestContext {
  /** Lower-case method as uWS gives it. */
  method: string;
  /** Host without port, lower case, no trailing dot. */
  host: string;
  /** Path as received, normalised (`normalisePath`: one spelling per path), no query. */
  path: string;
  /** Path exactly as received (the WAF reads traversals the normalised form has resolved). */
  rawPath: string;
  /** Raw query string without `?`, '' when none. */
  query: string;
  /** Request headers, names lower case, in arrival order. */
  headers: [string, string][];
  peer: PeerAddress;
  scheme: 'http' | 'https';
  startedAt: number;

  /** Set by the match phase. */
  record: ZoneRecord | undefined;
  recordId = 0;
  /** The domain's custom pages (custom-pages.ts), set by the match phase; undefined before a domain matched. */
  customPages: CustomPages | undefined = undefined;

  /** Path and query sent to the origin (rewrite changes them). */
  upstreamPath: string;
  upstreamQuery: string;
  /** Origin chosen by origin_route / origin_pool; the record's origin when undefined. */
  origin: OriginTarget | undefined;
  /** origin_pool rule id and origin index chosen, for passive health marking. */
  poolPick: { ruleId: number; index: number } | undefined;

  /** The rules that matched, in order; NO_HITS (shared, frozen) until the first one: most requests have none. */
  hits: RuleHit[] = NO_HITS;
  /**
   * Set when a custom rule's `allow` matched: the security phases after the custom rules (rate_limit, the challenge,
   * and any later one such as the WAF) leave the request alone.
   */
  securityAllowed = false;
  /** JA4H-style fingerprint, '' unless a fingerprint rule's filters accepted the request (rules/fingerprint.ts). */
  fingerprint = '';
  /** Bot score 1–99 and class, 0 and '' unless a bot_route rule's filters accepted the request (rules/bot.ts). */
  botScore = 0;
  botClass = '';
  /** The origin a routing bot_route rule chose (wins over origin_route and origin_pool), and that rule's id. */
  botRoute: OriginRouteAction | undefined;
  botRouteId = 0;
  /** WAF findings (null until one is made: most requests have none). */
  waf: WafEvent[] | null = null;
  cacheStatus: CacheStatus = '';
  status = 0;
  bytes = 0;
  upstreamMs = -1;
  /** Body bytes received from the origin (before compression or transformation). */
  originBytes = 0;
  /** Why the edge answered instead of the origin (a refusal, a redirect, an origin failure); '' when it did not. */
  unserved: UnservedReason | '' = '';
  /** The answer is the Markdown for agents of an HTML page (optimize's markdown_for_agents). */
  markdown = false;
  /** The enforced rate_limit rule that refused or challenged the request, and the key it counted ('' none). */
  rateLimitRule = 0;
  rateLimitKey = '';
  /** True once the client went away or the response was finished: nothing more may be written. */
  aborted = false;
  /**
   * True while uWS is paused on the request body (the body stream's buffer is full, server.ts): an answer given then
   * closes the connection, since uWS would read no more of it and the client's next request on it would hang.
   */
  bodyPaused = false;
  /** The origin exchange in flight, cancelled when the client goes away (set by the upstream dispatch). */
  upstream: { cancel(): void } | undefined = undefined;

  constructor(init: {
    method: string;
    host: string;
    path: string;
    rawPath?: string;
    query: string;
    headers: [string, string][];
    peer: PeerAddress;
    scheme: 'http' | 'https';
    startedAt: number;
  }) {
    this.method = init.method;
    this.host = init.host;
    this.path = init.path;
    this.rawPath = init.rawPath ?? init.path;
    this.query = init.query;
    this.headers = init.headers;
    this.peer = init.peer;
    this.scheme = init.scheme;
    this.startedAt = init.startedAt;
    this.upstreamPath = init.path;
    this.upstreamQuery = init.query;
  }

  /** The path firstSegment() last read and its first segment: one slice per request for every rule index. */
  private segmentPath = '';
  private segment = '';

  /** The path's firstSegment: the key the rule indexes look rules up by. */
  firstSegment(): string {
    const path = this.path;
    if (path !== this.segmentPath) {
      this.segment = firstSegment(path);
      this.segmentPath = path;
    }
    return this.segment;
  }

  hit(id: number, type: string, dry: boolean): void {
    if (this.hits === NO_HITS) this.hits = [];
    this.hits.push(ruleHit(id, type, dry));
  }

  /** The first value of header `name` (lower case), or undefined. An indexed loop: no iterator, no destructuring. */
  header(name: string): string | undefined {
    const headers = this.headers;
    for (let i = 0; i < headers.length; i++) if (headers[i][0] === name) return headers[i][1];
    return undefined;
  }
}
