// The `body` bytes of a compiled Rule (proto RuleSet.rules[].body): the rule's filters and own fields, msgpack-encoded.
import { pack, unpack } from 'msgpackr';
import type { RuleCommon } from './validate-rule.js';

/** What a rule's body carries: the common filter fields (without enabled/priority, which are proto fields) and the type's fields. */
export type RuleBody = Omit<RuleCommon, 'enabled' | 'priority'> & Record<string, unknown>;

export function encodeRuleBody(body: RuleBody): Uint8Array {
  return pack(body);
}

export function decodeRuleBody(bytes: Uint8Array): RuleBody {
  return unpack(bytes) as RuleBody;
}
