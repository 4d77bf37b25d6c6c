// How an order's challenges are published, checked and withdrawn: dns-01 TXTs (in the domain's zone, the ACME
// delegation zone or an acme-dns account; the control plane says where to watch them) or http-01 key authorizations
// answered by our edge nodes (plan.challenge 'http-01'). manageCertificates runs the same order whichever it is.
import type { AcmeChallenge, AcmePlan } from '../types.js';
import { background, interactive } from './proxies.js';

export interface PublishedSteps {
  /** Whether everything published can be seen where the CA will look, and what is missing. */
  served(): Promise<{ served: boolean; missing: string[] }>;
  /** What was not seen in time, for the failure's reason. */
  notServed: string;
}

/** Publishes the order's challenges (one activity) and says how to wait for them. */
export async function publishChallenges(
  challenge: AcmePlan['challenge'],
  domain: string,
  challenges: AcmeChallenge[],
): Promise<PublishedSteps> {
  if (challenge === 'http-01') {
    await background.publishAcmeHttpChallenges(domain, challenges);
    return {
      served: () => interactive.acmeHttpChallengesServed(challenges),
      notServed: 'our edge nodes did not answer the http-01 key authorization',
    };
  }
  const where = await background.publishAcmeChallenges(domain, challenges);
  const watch = where?.watch ?? challenges;
  const via = where?.via ?? 'nodes';
  return {
    served: () => interactive.acmeChallengesServed(watch, via),
    notServed: `${via === 'resolvers' ? 'public resolvers did not see' : 'our DNS nodes did not serve'} the challenge TXT`,
  };
}

/** Withdraws what publishChallenges published. */
export async function withdrawChallenges(
  challenge: AcmePlan['challenge'],
  domain: string,
  challenges: AcmeChallenge[],
): Promise<unknown> {
  if (challenge === 'http-01') return background.withdrawAcmeHttpChallenges(domain, challenges);
  return background.withdrawAcmeChallenges(domain, challenges);
}
