// bot_route rules: the client classified from its request (user-agent families below, header shape) into one of
// BOT_CLASSES with a bot score 1–99 (1: surely automated, 99: surely a person); a claimed search crawler is verified
// by reverse-then-forward DNS off the request's path (README "bot_route").
import { BlockList } from 'node:net';
import { Resolver } from 'node:dns/promises';
import { BOT_CLASSES, type BotClass, type RuleBody } from '@platform/shared/match';
import type { RequestContext } from '../context.js';
import { compileOriginRoute, type OriginRouteAction } from './origin-route.js';
import type { ClientRuleKind } from './fingerprint.js';

/** A search engine's crawlers: user-agent tokens (lower case) and the domains its reverse DNS names end in. */
interface CrawlerFamily {
  name: string;
  tokens: readonly string[];
  domains: readonly string[];
}

/** Search crawlers their operators document as verifiable by reverse-then-forward DNS. */
export const SEARCH_CRAWLERS: readonly CrawlerFamily[] = [
  {
    name: 'google',
    tokens: [
      'googlebot',
      'google-inspectiontool',
      'googleother',
      'adsbot-google',
      'mediapartners-google',
      'apis-google',
      'feedfetcher-google',
      'storebot-google',
    ],
    domains: ['googlebot.com', 'google.com', 'googleusercontent.com'],
  },
  { name: 'bing', tokens: ['bingbot', 'bingpreview', 'adidxbot', 'msnbot'], domains: ['search.msn.com'] },
  {
    name: 'yandex',
    tokens: ['yandexbot', 'yandeximages', 'yandex.com/bots'],
    domains: ['yandex.ru', 'yandex.net', 'yandex.com'],
  },
  { name: 'baidu', tokens: ['baiduspider'], domains: ['baidu.com', 'baidu.jp'] },
  { name: 'apple', tokens: ['applebot'], domains: ['applebot.apple.com'] },
  { name: 'yahoo', tokens: ['yahoo! slurp'], domains: ['crawl.yahoo.net'] },
  { name: 'petal', tokens: ['petalbot'], domains: ['petalsearch.com'] },
  { name: 'seznam', tokens: ['seznambot'], domains: ['seznam.cz'] },
  { name: 'naver', tokens: ['yeti/'], domains: ['naver.com'] },
];

/** Crawlers and fetchers of AI companies (training, search for assistants, user-triggered fetches). */
export const AI_CRAWLER_TOKENS: readonly string[] = [
  'gptbot',
  'chatgpt-user',
  'oai-searchbot',
  'claudebot',
  'claude-web',
  'claude-user',
  'claude-searchbot',
  'anthropic-ai',
  'ccbot',
  'perplexitybot',
  'perplexity-user',
  'bytespider',
  'amazonbot',
  'meta-externalagent',
  'meta-externalfetcher',
  'facebookbot',
  'cohere-ai',
  'cohere-training-data-crawler',
  'diffbot',
  'youbot',
  'ai2bot',
  'omgilibot',
  'timpibot',
  'imagesiftbot',
  'mistralai-user',
  'duckassistbot',
  'google-cloudvertexbot',
];

/** HTTP libraries, command-line clients, headless browsers, scanners. */
export const AUTOMATION_TOKENS: readonly string[] = [
  'curl/',
  'wget/',
  'python-requests',
  'python-urllib',
  'python-httpx',
  'aiohttp',
  'go-http-client',
  'java/',
  'okhttp',
  'libwww-perl',
  'lwp::',
  'scrapy',
  'headlesschrome',
  'phantomjs',
  'selenium',
  'playwright',
  'puppeteer',
  'axios/',
  'node-fetch',
  'undici',
  'postmanruntime',
  'apache-httpclient',
  'guzzlehttp',
  'faraday',
  'restsharp',
  'reqwest',
  'httpie',
  'powershell',
  'winhttp',
  'libcurl',
  'colly',
  'mechanize',
  'masscan',
  'zgrab',
  'nuclei',
  'sqlmap',
  'nikto',
  'nmap',
  // Generic words of self-declared crawlers not listed above (SEO and monitoring crawlers among them).
  'bot',
  'crawler',
  'spider',
];

/** Device names holding a generic bot word (`bot`, `spider`): removed before AUTOMATION_TOKENS are looked for. */
export const DEVICE_NAMES: readonly string[] = ['cubot'];
function withoutDevices(ua: string): string {
  for (const d of DEVICE_NAMES) if (ua.includes(d)) ua = ua.split(d).join(' ');
  return ua;
}

/** User-agent characters read (a longer value is classified by its start). */
export const MAX_UA_CHARS = 512;

export interface BotVerdict {
  cls: BotClass;
  score: number;
}

/** Index of the search crawler family the user agent claims, -1 when none. */
function claimedCrawler(ua: string): number {
  for (let i = 0; i < SEARCH_CRAWLERS.length; i++)
    for (const t of SEARCH_CRAWLERS[i].tokens) if (ua.includes(t)) return i;
  return -1;
}

const anyOf = (ua: string, tokens: readonly string[]) => {
  for (const t of tokens) if (ua.includes(t)) return true;
  return false;
};

/** Headers a browser sends on every navigation and subresource request. */
function headerShapeScore(ctx: RequestContext, ua: string): number {
  let accept = false,
    language = false,
    encoding = false,
    fetchMeta = false;
  for (const [k] of ctx.headers) {
    if (k === 'accept') accept = true;
    else if (k === 'accept-language') language = true;
    else if (k === 'accept-encoding') encoding = true;
    else if (k === 'sec-fetch-mode') fetchMeta = true;
  }
  let score = 99;
  if (!ua.startsWith('mozilla/')) score -= 30;
  if (!accept) score -= 20;
  if (!language) score -= 25;
  if (!encoding) score -= 20;
  // Chrome (since 76), Firefox (90) and Safari (16.4) send Sec-Fetch-Mode.
  if (!fetchMeta && (ua.includes('chrome/') || ua.includes('firefox/'))) score -= 15;
  if (ctx.headers.length < 4) score -= 20;
  return Math.max(2, score);
}

/** Below this header-shape score a client with an unlisted user agent counts as automation. */
export const HUMAN_MIN_SCORE = 30;

/**
 * Classifies the request (no I/O). A claimed search crawler is `verified_crawler` only when `verified` says its
 * address passed reverse-then-forward DNS for that family; `verified` may start that lookup for a later request.
 */
export function classify(ctx: RequestContext, verified: (family: number) => boolean): BotVerdict {
  const raw = ctx.header('user-agent') ?? '';
  const ua = raw.length > MAX_UA_CHARS ? raw.slice(0, MAX_UA_CHARS) : raw;
  const kind = uaKind(ua);
  if (kind === UA_EMPTY) return { cls: 'automation', score: 1 };
  if (kind === UA_AI) return { cls: 'ai_crawler', score: 1 };
  if (kind === UA_TOOL) return { cls: 'automation', score: 2 };
  if (kind >= 0) return { cls: verified(kind) ? 'verified_crawler' : 'unverified_crawler', score: 1 };
  const score = headerShapeScore(ctx, ua.toLowerCase());
  return { cls: score >= HUMAN_MIN_SCORE ? 'human' : 'automation', score };
}

const UA_EMPTY = -1,
  UA_AI = -2,
  UA_TOOL = -3,
  UA_OTHER = -4;
/**
 * What a user agent (at most MAX_UA_CHARS) says of itself: a search crawler family's index, or UA_*. Kept for recent
 * values (browsers send a few thousand distinct ones): bounded, emptied when full.
 */
const uaMemo = new Map<string, number>();
function uaKind(raw: string): number {
  let kind = uaMemo.get(raw);
  if (kind !== undefined) return kind;
  const ua = raw.toLowerCase();
  if (ua.trim() === '') kind = UA_EMPTY;
  else if (anyOf(ua, AI_CRAWLER_TOKENS)) kind = UA_AI;
  else {
    const family = claimedCrawler(ua);
    kind = family >= 0 ? family : anyOf(withoutDevices(ua), AUTOMATION_TOKENS) ? UA_TOOL : UA_OTHER;
  }
  if (uaMemo.size >= 4096) uaMemo.clear();
  uaMemo.set(raw, kind);
  return kind;
}

// ---- Crawler verification (reverse-then-forward DNS), cached and rate-bounded.

export interface CrawlerDns {
  reverse(ip: string): Promise<string[]>;
  resolve4(host: string): Promise<string[]>;
  resolve6(host: string): Promise<string[]>;
}

export interface VerifierOptions {
  /** Entries kept (address × family); the oldest is dropped beyond it. */
  maxEntries: number;
  /** How long a passed / failed verification is believed. */
  okTtlMs: number;
  failTtlMs: number;
  /** Lookups started per second at most (a token bucket of this size); claims beyond it stay unverified. */
  perSecond: number;
  /** Lookups in flight at most. */
  maxInFlight: number;
}

export const VERIFIER_DEFAULTS: VerifierOptions = {
  maxEntries: 10_000,
  okTtlMs: 6 * 3600_000,
  failTtlMs: 3600_000,
  perSecond: 10,
  maxInFlight: 32,
};

const PENDING = 0,
  OK = 1,
  FAIL = 2;
/** Reverse names tried per address (a PTR set can be long; the forward lookup is per name). */
const MAX_PTR_NAMES = 2;

export class CrawlerVerifier {
  private readonly entries = new Map<string, { state: number; until: number }>();
  private tokens: number;
  private refilledAt = 0;
  private inFlight = 0;
  /** Lookups started, and claims left unverified because the budget was spent (exposed for tests and metrics). */
  started = 0;
  skipped = 0;

  constructor(
    private readonly dns: CrawlerDns,
    private readonly opts: VerifierOptions = VERIFIER_DEFAULTS,
  ) {
    this.tokens = opts.perSecond;
  }

  /** True when `ip` passed verification for `family`; otherwise false, and a lookup starts if none is known. */
  verified(ip: string, family: number, now = Date.now()): boolean {
    const key = `${family}|${ip}`;
    const e = this.entries.get(key);
    if (e !== undefined && (e.state === PENDING || e.until > now)) return e.state === OK;
    if (e !== undefined) this.entries.delete(key);
    if (!this.take(now)) {
      this.skipped++;
      return false;
    }
    this.put(key, { state: PENDING, until: 0 });
    this.started++;
    this.inFlight++;
    void this.lookup(ip, SEARCH_CRAWLERS[family].domains).then(
      (ok) => this.settle(key, ok),
      () => this.settle(key, false),
    );
    return false;
  }

  private settle(key: string, ok: boolean): void {
    this.inFlight--;
    const now = Date.now();
    this.entries.delete(key);
    this.put(key, { state: ok ? OK : FAIL, until: now + (ok ? this.opts.okTtlMs : this.opts.failTtlMs) });
  }

  private put(key: string, e: { state: number; until: number }): void {
    while (this.entries.size >= this.opts.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    this.entries.set(key, e);
  }

  private take(now: number): boolean {
    if (this.inFlight >= this.opts.maxInFlight) return false;
    const elapsed = now - this.refilledAt;
    if (elapsed > 0) {
      this.tokens = Math.min(this.opts.perSecond, this.tokens + (elapsed * this.opts.perSecond) / 1000);
      this.refilledAt = now;
    }
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }

  private async lookup(ip: string, domains: readonly string[]): Promise<boolean> {
    const names = (await this.dns.reverse(ip)).slice(0, MAX_PTR_NAMES);
    const v6 = ip.includes(':');
    for (const raw of names) {
      const name = raw.toLowerCase().replace(/\.$/, '');
      if (!domains.some((d) => name.endsWith(`.${d}`))) continue;
      const addresses = await (v6 ? this.dns.resolve6(name) : this.dns.resolve4(name)).catch(() => []);
      const list = new BlockList();
      for (const a of addresses.slice(0, 16)) list.addAddress(a, v6 ? 'ipv6' : 'ipv4');
      if (list.check(ip, v6 ? 'ipv6' : 'ipv4')) return true;
    }
    return false;
  }

  /** Entries held (for the bound's test). */
  get size(): number {
    return this.entries.size;
  }
}

/** A resolver for crawler verification: `servers` (host:port) when given, else the system's; 2 s per query, 1 try. */
export function crawlerDns(servers: readonly string[]): CrawlerDns {
  const r = new Resolver({ timeout: 2000, tries: 1 });
  if (servers.length > 0) r.setServers([...servers]);
  return r;
}

/** The verifier of this process (configured at start; the system resolver until then). */
export let crawlerVerifier = new CrawlerVerifier(crawlerDns([]));

export function configureCrawlerVerifier(servers: readonly string[], opts: VerifierOptions = VERIFIER_DEFAULTS) {
  crawlerVerifier = new CrawlerVerifier(crawlerDns(servers), opts);
}

/** The request's class and score, computed once and kept on the context (and in its log record). */
export function botVerdictOf(ctx: RequestContext): BotClass {
  if (ctx.botScore === 0) {
    const v = classify(ctx, (family) => crawlerVerifier.verified(ctx.peer.text, family));
    ctx.botScore = v.score;
    ctx.botClass = v.cls;
  }
  return ctx.botClass as BotClass;
}

export interface BotRouteAction {
  kind: ClientRuleKind;
  /** Bit i set: BOT_CLASSES[i] matches. */
  classes: number;
  route: OriginRouteAction | undefined;
}

export function compileBotRoute(f: RuleBody): BotRouteAction {
  let classes = 0;
  for (const c of Array.isArray(f.classes) ? (f.classes as unknown[]) : []) {
    const i = BOT_CLASSES.indexOf(c as BotClass);
    if (i >= 0) classes |= 1 << i;
  }
  const kind = (f.action as ClientRuleKind | undefined) ?? 'block';
  return { kind, classes, route: kind === 'route' ? compileOriginRoute(f) : undefined };
}

export const classBit = (cls: BotClass): number => 1 << BOT_CLASSES.indexOf(cls);
