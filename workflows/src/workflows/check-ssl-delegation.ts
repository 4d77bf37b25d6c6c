// ssl_delegation check (POST /domains/{domain}/ssl/delegation/check; id `ssl-delegation-check:<domain>`): the
// domain's canary must be seen at _acme-challenge by every resolver; a domain awaiting verification becomes active.
import type { DelegationCheckResult } from '../types.js';
import { interactive } from './proxies.js';

export interface CheckSslDelegationInput {
  domain: string;
  target: string;
  canary: string;
  delegationZone: string;
  activate: boolean;
}

export async function checkSslDelegation(input: CheckSslDelegationInput): Promise<DelegationCheckResult | null> {
  const result = await interactive.checkAcmeDelegation(input);
  if (!result.ok) return result;
  if (!input.activate) return { ok: true };
  const reply = await interactive.reportVerified(input.domain, 'ssl_delegation');
  if (!reply) return null;
  return { ok: true, state: reply.state };
}
