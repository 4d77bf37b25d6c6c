// RULE_COMPILERS: the rule types with an edge engine and the compiler of each one's action (see README.md for phases).
import type { ActionCompiler } from './compile.js';
import { compileBasicAuth } from './basic-auth.js';
import { compileCache } from './cache.js';
import { compileCaptcha } from './challenge.js';
import { compileDrop } from './drop.js';
import { compileErrorPage } from './error-page.js';
import { compileHeader } from './header.js';
import { compileOriginPool } from './origin-pool.js';
import { compileOriginRoute } from './origin-route.js';
import { compileRateLimit } from './rate-limit.js';
import { compileRedirect } from './redirect.js';
import { compileRewrite } from './rewrite.js';

/** Types absent here (waf, bot_route, fingerprint, optimize) are stored by the API and ignored. */
export const RULE_COMPILERS: Readonly<Record<string, ActionCompiler | undefined>> = {
  drop: compileDrop,
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
};
