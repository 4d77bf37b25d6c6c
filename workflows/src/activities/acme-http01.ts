// ACME http-01 activities: the key authorizations of an order published to the edge through the control plane (the
// domain's snapshot carries them; the edge answers /.well-known/acme-challenge/<token>), checked on every edge node
// in ACME_EDGE_NODES before the CA is told, and withdrawn after. Which domains use http-01 is the control plane's
// decision (control-plane/src/internal/acme-http01.ts); the order steps are shared with dns-01 (acme.ts).
import { request } from 'node:http';
import { ACME_HTTP01_PREFIX } from '@platform/shared/config';
import type { Resolver } from '../config.js';
import type { AcmeChallenge } from '../types.js';
import { controlPlanePost, type ControlPlaneDeps } from './control-plane.js';

export interface AcmeHttp01Deps extends ControlPlaneDeps {
  /** HTTP address of every edge node (host:port): a challenge goes to the CA once all of them answer it. */
  edgeNodes: Resolver[];
  timeoutMs: number;
}

/** An http-01 challenge as the order keeps it: `name` the hostname, `value` the key authorization. */
export function http01Challenge(
  hostname: string,
  token: string,
  keyAuthorization: string,
  challengeUrl: string,
  authorizationUrl: string,
): AcmeChallenge {
  return {
    type: 'http-01',
    identifier: hostname,
    name: hostname,
    token,
    value: keyAuthorization,
    challengeUrl,
    authorizationUrl,
  };
}

/** What one edge node answers for the challenge: its body (first KiB), or why there is none. */
function fetchFromEdge(edge: Resolver, ch: AcmeChallenge, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: edge.host,
        port: edge.port,
        path: `${ACME_HTTP01_PREFIX}${ch.token}`,
        headers: { host: ch.name },
        agent: false,
        timeout: timeoutMs,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
          if (body.length > 1024) res.destroy();
        });
        res.on('close', () => resolve(res.statusCode === 200 ? body.trim() : `HTTP ${res.statusCode}`));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (err) => resolve(err.message));
    req.end();
  });
}

export function createAcmeHttp01Activities(deps: AcmeHttp01Deps) {
  const post = controlPlanePost(deps);
  const d = (domain: string) => `/internal/domains/${encodeURIComponent(domain)}`;
  const body = (challenges: AcmeChallenge[]) => ({
    challenges: challenges.map((c) => ({ hostname: c.name, token: c.token, key_authorization: c.value })),
  });
  return {
    /** Publishes the key authorizations for the edge (one config-log entry). */
    async publishAcmeHttpChallenges(
      domain: string,
      challenges: AcmeChallenge[],
    ): Promise<{ published: number } | null> {
      return post(`${d(domain)}/acme/http-challenges`, body(challenges));
    },
    /** Withdraws them again. */
    async withdrawAcmeHttpChallenges(
      domain: string,
      challenges: AcmeChallenge[],
    ): Promise<{ withdrawn: number } | null> {
      return post(`${d(domain)}/acme/http-challenges/withdraw`, body(challenges));
    },
    /** True once every edge node answers every key authorization (what the CA will fetch). */
    async acmeHttpChallengesServed(challenges: AcmeChallenge[]): Promise<{ served: boolean; missing: string[] }> {
      const missing: string[] = [];
      for (const ch of challenges)
        for (const edge of deps.edgeNodes) {
          const got = await fetchFromEdge(edge, ch, deps.timeoutMs);
          if (got !== ch.value) missing.push(`${edge.host}:${edge.port} ${ch.name} (${got.slice(0, 60)})`);
        }
      return { served: missing.length === 0, missing };
    },
  };
}
