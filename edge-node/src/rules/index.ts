// RULE_COMPILERS: the rule types with an edge engine and the compiler of each one's action (see README.md for phases).
import type { ActionCompiler } from './compile.js';
import { compileBasicAuth } from './basic-auth.js';
import { compileCache } from './cache.js';
import { compileDrop } from './drop.js';
import { compileErrorPage } from './error-page.js';
import { compileHeader } from './header.js';
import { compileOriginPool } from './origin-pool.js';
import { compileOriginRoute } from './origin-route.js';
import { compileRedirect } from './redirect.js';
import { compileRewrite } from './rewrite.js';

/** Types absent here (waf, captcha, rate_limit, bot_route, fingerprint, optimize) are stored by the API and ignored. */
export const RULE_COMPILERS: Readonly<Record<string, ActionCompiler | undefined>> = {
  drop: compileDrop,
  basic_auth: compileBasicAuth,
  redirect: compileRedirect,
  rewrite: compileRewrite,
  origin_route: compileOriginRoute,
  origin_pool: compileOriginPool,
  cache: compileCache,
  header: compileHeader,
  error_page: compileErrorPage,
};
