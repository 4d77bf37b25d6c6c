// The client phase: fingerprint rules, then bot_route rules, each in (priority, id) order (README "fingerprint",
// "bot_route"). Nothing is computed for a request no such rule's filters accept.
import type { RequestContext } from '../context.js';
import type { CompiledRule, RuleIndex } from './compile.js';
import { botVerdictOf, classBit, type BotRouteAction } from './bot.js';
import { fingerprintOf, type FingerprintAction } from './fingerprint.js';

export type ClientRule = CompiledRule<FingerprintAction> | CompiledRule<BotRouteAction>;

const fpScratch: CompiledRule<FingerprintAction>[] = [];
const botScratch: CompiledRule<BotRouteAction>[] = [];

/**
 * The first enforced fingerprint or bot_route rule that matches and blocks, challenges or routes, returned without its
 * hit (the caller records it when it acts). `log` and dry-run matches are recorded as hits and evaluation goes on;
 * an enforced `allow` is recorded and ends its own type's rules (an allowing fingerprint rule also ends bot_route).
 */
export function decideClient(
  fingerprints: RuleIndex<FingerprintAction> | undefined,
  bots: RuleIndex<BotRouteAction> | undefined,
  ctx: RequestContext,
): ClientRule | undefined {
  let decided: ClientRule | undefined;
  let allowed = false;
  if (fingerprints) {
    fingerprints.all(ctx, fpScratch, false);
    for (let i = 0; i < fpScratch.length; i++) {
      const r = fpScratch[i];
      if (!r.action.values.has(fingerprintOf(ctx))) continue;
      if (r.dryRun || r.action.kind === 'log') {
        ctx.hit(r.id, r.type, r.dryRun);
        continue;
      }
      if (r.action.kind === 'allow') {
        ctx.hit(r.id, r.type, false);
        allowed = true;
        break;
      }
      decided = r;
      break;
    }
    fpScratch.length = 0;
  }
  if (decided || allowed || !bots) return decided;
  bots.all(ctx, botScratch, false);
  for (let i = 0; i < botScratch.length; i++) {
    const r = botScratch[i];
    if ((r.action.classes & classBit(botVerdictOf(ctx))) === 0) continue;
    if (r.dryRun || r.action.kind === 'log') {
      ctx.hit(r.id, r.type, r.dryRun);
      continue;
    }
    if (r.action.kind === 'allow') {
      ctx.hit(r.id, r.type, false);
      break;
    }
    decided = r;
    break;
  }
  botScratch.length = 0;
  return decided;
}
