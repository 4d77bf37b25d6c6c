// Manual nameserver check (POST /domains/{domain}/check-ns; id `check-ns:<domain>`): one lookup, one report.
import type { NsCheckResult } from '../types.js';
import { interactive } from './proxies.js';

export async function checkNameservers(input: { domain: string }): Promise<NsCheckResult | null> {
  const observations = await interactive.lookupNameservers(input.domain);
  return interactive.reportDelegation(input.domain, observations, true);
}
