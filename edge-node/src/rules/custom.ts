// Custom rules: a wirefilter-style expression (compiled here once per config version by the shared compiler the API
// validated it with) and the action taken when it matches. Evaluated by phases.ts right after drop (README "Custom
// rules").
import {
  compileExpression,
  type CustomRuleAction,
  type ExpressionRequest,
  type RuleBody,
} from '@platform/shared/match';

export interface CustomAction {
  kind: CustomRuleAction;
  test(r: ExpressionRequest): boolean;
}

export function compileCustom(f: RuleBody): CustomAction {
  const e = compileExpression(String(f.expression));
  return { kind: f.action as CustomRuleAction, test: e.test };
}
