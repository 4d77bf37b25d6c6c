// Activities that change domain state through the control plane's /internal API (the control plane owns the
// database; with PGlite no other process may open it). Authenticated with the node token.
import { ApplicationFailure } from '@temporalio/activity';
import type {
  AcmeAttemptReport,
  AcmeChallenge,
  AcmePlan,
  NsCheckResult,
  PublishedChallenges,
  ResolverObservation,
  ScannedRecord,
} from '../types.js';

export interface ControlPlaneDeps {
  baseUrl: string;
  nodeToken: string;
}

/** What the control plane answers about a domain after a report; null when the domain no longer exists. */
export interface DomainStateReply {
  state: string;
  verification_state: string | null;
}

/**
 * POSTs JSON to the control plane's /internal API: null on 404 (the domain is gone), a non-retryable failure on another
 * 4xx, a retryable error when it is unreachable, answers 5xx or refuses the node token.
 */
export function controlPlanePost(deps: ControlPlaneDeps, timeoutMs = 15_000) {
  return async function post<T>(path: string, body: unknown): Promise<T | null> {
    let res: Response;
    try {
      res = await fetch(`${deps.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${deps.nodeToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      // The control plane is down or restarting: retried by the activity's retry policy.
      throw new Error(
        `control plane unreachable at ${deps.baseUrl}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const text = await res.text();
    if (res.status === 404) return null;
    if (res.status === 401 || res.status === 403) {
      // Not our control plane (another instance's, or a wrong NODE_TOKEN): never complete its work; retried
      // until the right worker takes the task or the operator fixes CONTROL_PLANE_URL / NODE_TOKEN.
      throw new Error(
        `the control plane at ${deps.baseUrl} does not accept this worker's node token (${res.status}): ` +
          'is CONTROL_PLANE_URL pointing at another instance?',
      );
    }
    if (res.status >= 400 && res.status < 500) {
      throw ApplicationFailure.nonRetryable(
        `control plane refused ${path}: ${res.status} ${text}`,
        'ControlPlaneRefused',
      );
    }
    if (!res.ok) throw new Error(`control plane answered ${res.status} to ${path}: ${text}`);
    return JSON.parse(text) as T;
  };
}

export function createControlPlaneActivities(deps: ControlPlaneDeps) {
  const post = controlPlanePost(deps);
  const d = (domain: string) => `/internal/domains/${encodeURIComponent(domain)}`;

  return {
    /** Reports what the resolvers see; the control plane compares with NS_SETS and activates a matching domain. */
    async reportDelegation(
      domain: string,
      observations: ResolverObservation[],
      manual: boolean,
    ): Promise<NsCheckResult | null> {
      return post<NsCheckResult>(`${d(domain)}/delegation`, { observations, manual });
    },
    /** An external domain's CNAME or TXT was found: activate it if it still awaits verification. */
    async reportVerified(domain: string, method: 'cname' | 'txt' | 'ssl_delegation'): Promise<DomainStateReply | null> {
      return post<DomainStateReply>(`${d(domain)}/verified`, { method });
    },
    /** The token's expiry timer fired: mark verification failed if this token is still the one awaited. */
    async expireVerification(domain: string, token: string): Promise<DomainStateReply | null> {
      return post<DomainStateReply>(`${d(domain)}/verification-expired`, { token });
    },
    /** Developer mode's timer fired: switch it off unless it was re-armed with a later expiry. */
    async endDeveloperMode(
      domain: string,
      expiresAtMs: number,
    ): Promise<{ enabled: boolean; expires_at: string | null } | null> {
      return post(`${d(domain)}/developer-mode/expire`, { expires_at_ms: expiresAtMs });
    },
    /** One step of the domain's DNSSEC key rollovers; `next_at_ms` is when the next one is due. */
    async rollDnssecKeys(domain: string): Promise<{ enabled: boolean; next_at_ms: number | null } | null> {
      return post(`${d(domain)}/dnssec/roll`, {});
    },
    /** Imports scanned records (records already present are skipped); one config-log entry. */
    async importRecords(
      domain: string,
      records: ScannedRecord[],
    ): Promise<{ imported: number; skipped: number } | null> {
      return post(`${d(domain)}/records/import`, { records });
    },
    /** What to issue for the domain now and the certificate it has (null: the domain is gone). */
    async acmePlan(domain: string): Promise<AcmePlan | null> {
      return post<AcmePlan>(`${d(domain)}/acme/plan`, {});
    },
    /** Records where the domain's issuance stands (GET ssl/ shows it). */
    async reportAcmeAttempt(domain: string, report: AcmeAttemptReport): Promise<{ ok: true } | null> {
      return post(`${d(domain)}/acme/attempt`, report);
    },
    /**
     * Publishes dns-01 TXT records (the domain's zone, the ACME delegation zone or its acme-dns account) and says
     * where they can be seen.
     */
    async publishAcmeChallenges(domain: string, challenges: AcmeChallenge[]): Promise<PublishedChallenges | null> {
      return post(`${d(domain)}/acme/challenges`, {
        records: challenges.map((c) => ({ name: c.name, value: c.value })),
      });
    },
    /** Withdraws them again (only the records the platform published). */
    async withdrawAcmeChallenges(domain: string, challenges: AcmeChallenge[]): Promise<{ withdrawn: number } | null> {
      return post(`${d(domain)}/acme/challenges/withdraw`, {
        records: challenges.map((c) => ({ name: c.name, value: c.value })),
      });
    },
  };
}
