// RULE_COMPILERS: the rule types with an edge engine and the compiler of each one's action (see README.md for phases).
import type { RuleBody, StoredRuleType } from '@platform/shared/match';
import type { ActionCompiler } from './compile.js';
import { compileBasicAuth, type BasicAuthAction } from './basic-auth.js';
import { compileBotRoute, type BotRouteAction } from './bot.js';
import { compileCache, type CacheAction } from './cache.js';
import { compileCaptcha, type CaptchaAction } from './challenge.js';
import { compileCustom, type CustomAction } from './custom.js';
import { compileDrop, type DropAction } from './drop.js';
import { compileErrorPage, type ErrorPageAction } from './error-page.js';
import { compileFingerprint, type FingerprintAction } from './fingerprint.js';
import { compileHeader, type HeaderAction } from './header.js';
import { compileOptimize, type OptimizeAction } from './optimize.js';
import { compileOriginPool, type OriginPoolAction } from './origin-pool.js';
import { compileOriginRoute, type OriginRouteAction } from './origin-route.js';
import { compileRateLimit, type RateLimitAction } from './rate-limit.js';
import { compileRedirect, type RedirectAction } from './redirect.js';
import { compileRewrite, type RewriteAction } from './rewrite.js';
import { compileWaf, type WafAction } from './waf.js';

/** The action each rule type with an engine compiles to. */
export interface RuleActions {
  drop: DropAction;
  custom: CustomAction;
  rate_limit: RateLimitAction;
  captcha: CaptchaAction;
  basic_auth: BasicAuthAction;
  redirect: RedirectAction;
  rewrite: RewriteAction;
  origin_route: OriginRouteAction;
  origin_pool: OriginPoolAction;
  cache: CacheAction;
  header: HeaderAction;
  error_page: ErrorPageAction;
  waf: WafAction;
  fingerprint: FingerprintAction;
  bot_route: BotRouteAction;
  optimize: OptimizeAction;
}

/** A rule type the edge evaluates; every one is a type the rules table stores (checked below). */
export type EngineRuleType = keyof RuleActions & StoredRuleType;
const everyEngineTypeIsARuleType: keyof RuleActions extends StoredRuleType ? true : never = true;
void everyEngineTypeIsARuleType;

type RuleCompilers = {
  readonly [T in EngineRuleType]: (fields: RuleBody, rule: Parameters<ActionCompiler>[1]) => RuleActions[T];
};

/** Every stored rule type has an engine (optimize: compression, minification and Markdown; not images). */
export const RULE_COMPILERS: RuleCompilers = {
  drop: compileDrop,
  custom: compileCustom,
  rate_limit: compileRateLimit,
  captcha: compileCaptcha,
  basic_auth: compileBasicAuth,
  redirect: compileRedirect,
  rewrite: compileRewrite,
  origin_route: compileOriginRoute,
  origin_pool: compileOriginPool,
  cache: compileCache,
  header: compileHeader,
  error_page: compileErrorPage,
  waf: compileWaf,
  fingerprint: compileFingerprint,
  bot_route: compileBotRoute,
  optimize: compileOptimize,
};

/** The compiler of a stored rule's type, when the edge has an engine for it. */
export function compilerOf(type: string): ActionCompiler | undefined {
  return Object.hasOwn(RULE_COMPILERS, type) ? RULE_COMPILERS[type as EngineRuleType] : undefined;
}

export function hasEngine(type: string): type is EngineRuleType {
  return Object.hasOwn(RULE_COMPILERS, type);
}
