// Manual verification (POST /domains/{domain}/verify; id `verify:<domain>`): the ssl_delegation CNAME or the TXT token.
import type { SslDelegationBlock, VerificationBlock, VerifyResult } from '../types.js';
import { interactive } from './proxies.js';

export interface VerifyDomainInput {
  domain: string;
  verification: VerificationBlock | null;
  sslDelegation: SslDelegationBlock | null;
}

export async function verifyDomain(input: VerifyDomainInput): Promise<VerifyResult | null> {
  const seen = await interactive.lookupVerification({
    verification: input.verification,
    sslDelegation: input.sslDelegation,
  });
  if (!seen.found) return { verified: false, state: 'unverified', error: seen.seen };
  const reply = await interactive.reportVerified(input.domain, seen.found);
  if (!reply) return null;
  return { verified: true, method: seen.found, state: reply.state };
}
