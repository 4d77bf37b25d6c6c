// Custom rules: a wirefilter-style expression (compiled here once per config version by the shared compiler the API
// validated it with) and the action taken when it matches. Evaluated by phases.ts right after drop (README "Custom
// rules").
import {
  compileExpression,
  type CustomRuleAction,
  type ExpressionRequest,
  type RuleBody,
} from '@platform/shared/match';
import type { RequestContext } from '../context.js';
import type { CompiledRule, RuleIndex } from './compile.js';

export interface CustomAction {
  kind: CustomRuleAction;
  test(r: ExpressionRequest): boolean;
}

export function compileCustom(f: RuleBody): CustomAction {
  const e = compileExpression(String(f.expression));
  return { kind: f.action as CustomRuleAction, test: e.test };
}

/** Custom rules whose filters match the request being evaluated (reused: evaluation is synchronous). */
const scratch: CompiledRule<CustomAction>[] = [];

/**
 * Custom rules in (priority, id) order: the first enforced match whose action is block, challenge, allow or skip
 * decides and is returned (its hit is the caller's to record); `log` matches and dry-run matches of any action are
 * recorded as hits and evaluation goes on. The expression runs only on rules whose record, host, IP and path filters
 * accept the request.
 */
export function decideCustom(
  index: RuleIndex<CustomAction>,
  ctx: RequestContext,
): CompiledRule<CustomAction> | undefined {
  index.all(ctx, scratch, false);
  let decided: CompiledRule<CustomAction> | undefined;
  for (let i = 0; i < scratch.length; i++) {
    const r = scratch[i];
    if (!r.action.test(ctx)) continue;
    if (r.dryRun || r.action.kind === 'log') {
      ctx.hit(r.id, r.type, r.dryRun);
      continue;
    }
    decided = r;
    break;
  }
  scratch.length = 0;
  return decided;
}
