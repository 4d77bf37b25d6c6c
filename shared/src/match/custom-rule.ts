// The own fields of a custom rule (the custom rules group, /domains/{domain}/custom-rules/): an expression compiled
// on write (a syntax error is a problem naming its line and column) and the action taken when it matches.
import { compileExpression, ExpressionError } from './expression.js';
import type { Problem } from './validate-rule.js';

/** The stored type of a custom rule (beside the fifteen RULE_TYPES, in the same rules table and snapshot). */
export const CUSTOM_RULE_TYPE = 'custom';
/**
 * block: 403; challenge: the proof-of-work page unless the client holds a clearance; allow: no later custom rule,
 * rate_limit or challenge (captcha rules, the record flag, Under Attack Mode) acts on the request; skip: no later
 * custom rule; log: recorded, evaluation goes on.
 */
export const CUSTOM_RULE_ACTIONS = ['block', 'challenge', 'allow', 'skip', 'log'] as const;
export type CustomRuleAction = (typeof CUSTOM_RULE_ACTIONS)[number];
export const MAX_DESCRIPTION_LENGTH = 500;

type Fields = Record<string, unknown>;

/** Validates and normalises `expression`, `action` and `description`; any other field is a problem. */
export function validateCustomRuleFields(
  input: Fields,
): { ok: true; value: Fields } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = [];
  const out: Fields = {};
  for (const k of Object.keys(input))
    if (k !== 'expression' && k !== 'action' && k !== 'description')
      problems.push({ path: k, message: 'unknown field' });
  const expression = input.expression;
  if (typeof expression !== 'string') problems.push({ path: 'expression', message: 'is required (a string)' });
  else {
    try {
      compileExpression(expression);
      out.expression = expression;
    } catch (err) {
      if (!(err instanceof ExpressionError)) throw err;
      problems.push({
        path: 'expression',
        message: err.message,
        line: err.line,
        column: err.column,
        offset: err.offset,
      });
    }
  }
  const action = input.action;
  if (action === undefined || action === null) problems.push({ path: 'action', message: 'is required' });
  else if (!(CUSTOM_RULE_ACTIONS as readonly unknown[]).includes(action))
    problems.push({ path: 'action', message: `must be one of ${CUSTOM_RULE_ACTIONS.join(', ')}` });
  else out.action = action;
  const description = input.description ?? '';
  if (typeof description !== 'string') problems.push({ path: 'description', message: 'must be a string' });
  else if (description.length > MAX_DESCRIPTION_LENGTH)
    problems.push({ path: 'description', message: `at most ${MAX_DESCRIPTION_LENGTH} characters` });
  else out.description = description;
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: out };
}
