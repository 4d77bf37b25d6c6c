// ACME activities (RFC 8555, with acme-client): one per step of an order, so that a worker killed in the middle of an
// order resumes at the step it was in. The account key comes from the control plane (one per directory URL); the
// order and its challenges travel through the workflow's history as plain data (URLs, tokens, TXT values); the
// certificate's private key never does: it is made, used and handed to the control plane inside one activity.
import * as acme from 'acme-client';
import { ApplicationFailure } from '@temporalio/activity';
import type { Resolver } from '../config.js';
import type { AcmeChallenge, AcmeOrder, AcmeOrderInput, IssuedCertificate } from '../types.js';
import { controlPlanePost, type ControlPlaneDeps } from './control-plane.js';
import { observe } from './dns-lookup.js';
import { http01Challenge } from './acme-http01.js';

export interface AcmeDeps extends ControlPlaneDeps {
  /** Our own DNS nodes: a challenge is handed to the CA only once every one of them serves its TXT. */
  dnsNodes: Resolver[];
  /** Public resolvers: where a TXT published through an acme-dns account is waited for. */
  resolvers: Resolver[];
  dnsTimeoutMs: number;
}

/** Failures that say the issuer itself is unavailable (refused, unreachable, timing out, answering 5xx). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'EPIPE',
]);

// acme-client retries a failed request itself, 5 times 5-25 s apart or after the CA's Retry-After (hours, for Let's
// Encrypt's rate limits) inside the call, and then loses the cause when there was no response at all: off. Temporal's
// retry policy and the workflow's backoff do the retrying, and a rate limit's "retry after" is honoured there.
const acmeDefaults = acme.axios.defaults as { acmeSettings?: Record<string, unknown> };
acmeDefaults.acmeSettings = { ...acmeDefaults.acmeSettings, retryMaxAttempts: 0 };

/**
 * When a CA's rate-limit problem says to retry (Let's Encrypt: "…, retry after 2025-01-02 03:04:05 UTC: see …"), as
 * epoch ms; undefined otherwise.
 */
export function retryAfterOf(message: string): number | undefined {
  const m = /retry after (\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.\d+)?(?: ?UTC|Z)/i.exec(message);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}T${m[2]}Z`);
  return Number.isNaN(t) ? undefined : t;
}

/** The error of an ACME call as one line: "certificate issuer unavailable …" or the CA's problem detail. */
export function describeAcmeError(err: unknown, directoryUrl: string): string {
  const e = err as { code?: string; message?: string; response?: { status?: number; data?: { detail?: string } } };
  const status = e?.response?.status;
  // What acme-client throws once its own retries of a request that got no response are spent.
  if (err instanceof TypeError && /reading 'config'/.test(err.message))
    return `certificate issuer unavailable at ${directoryUrl}: no response`;
  if ((e?.code && NETWORK_CODES.has(e.code)) || (status !== undefined && status >= 500))
    return `certificate issuer unavailable at ${directoryUrl}: ${e.code ?? `HTTP ${status}`}${e.message ? ` (${e.message})` : ''}`;
  const detail = e?.response?.data?.detail ?? e?.message ?? String(err);
  return `the certificate issuer refused: ${detail}`.replace(/\s+/g, ' ').slice(0, 1000);
}

/** An activity failure carrying the described error; retried by the activity's policy. */
function acmeFailure(err: unknown, directoryUrl: string): Error {
  if (err instanceof ApplicationFailure) return err;
  const message = describeAcmeError(err, directoryUrl);
  const retryAtMs = retryAfterOf(message);
  // A rate limit is not lifted by retrying now: the workflow waits until the CA's time (details[0].retryAtMs).
  if (retryAtMs !== undefined)
    return ApplicationFailure.create({
      message,
      type: 'AcmeRateLimited',
      nonRetryable: true,
      details: [{ retryAtMs }],
    });
  return ApplicationFailure.retryable(message, 'AcmeError');
}

/** The name a dns-01 TXT goes at for an authorization (a wildcard's is its base name's). */
export function challengeName(identifier: string): string {
  return `_acme-challenge.${identifier.replace(/^\*\./, '')}`;
}

export function createAcmeActivities(deps: AcmeDeps) {
  const post = controlPlanePost(deps);
  const accountKeys = new Map<string, string>();

  /** Fails at once, saying so, when the CA's directory does not answer (acme-client would retry for a minute). */
  async function probe(directoryUrl: string): Promise<void> {
    let why: string;
    try {
      const res = await fetch(directoryUrl, { signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      if (res.status < 500) return;
      why = `HTTP ${res.status}`;
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    }
    throw ApplicationFailure.retryable(
      `certificate issuer unavailable at ${directoryUrl}: ${why}`,
      'AcmeIssuerUnavailable',
    );
  }

  async function client(directoryUrl: string, email?: string): Promise<acme.Client> {
    await probe(directoryUrl);
    let key = accountKeys.get(directoryUrl);
    if (!key) {
      const reply = await post<{ account_key_pem: string }>('/internal/acme/account', { directory_url: directoryUrl });
      if (!reply) throw new Error('the control plane has no /internal/acme/account route');
      key = reply.account_key_pem;
      accountKeys.set(directoryUrl, key);
    }
    const c = new acme.Client({
      directoryUrl,
      accountKey: key,
      backoffAttempts: 10,
      backoffMin: 500,
      backoffMax: 5000,
    });
    // Every activity looks the account up by its key first (an issuer that lost its state, as a restarted Pebble,
    // gets it made again); only a missing account is created, with the terms agreed and the contact.
    try {
      await c.createAccount({ onlyReturnExisting: true });
    } catch {
      await c.createAccount({ termsOfServiceAgreed: true, ...(email ? { contact: [`mailto:${email}`] } : {}) });
    }
    return c;
  }

  return {
    /**
     * Creates the order and answers the challenges of its pending authorizations (valid ones need none): dns-01, or
     * http-01 when the input asks for it (the key authorization the edge answers, acme-http01.ts).
     */
    async acmeNewOrder(input: AcmeOrderInput): Promise<AcmeOrder> {
      const type = input.challengeType ?? 'dns-01';
      try {
        const c = await client(input.directoryUrl, input.email);
        const order = await c.createOrder({ identifiers: input.hostnames.map((value) => ({ type: 'dns', value })) });
        const challenges: AcmeChallenge[] = [];
        for (const authz of await c.getAuthorizations(order)) {
          if (authz.status === 'valid') continue;
          const challenge = authz.challenges.find((ch) => ch.type === type);
          if (!challenge) throw ApplicationFailure.nonRetryable(`no ${type} challenge for ${authz.identifier.value}`);
          const value = await c.getChallengeKeyAuthorization(challenge);
          challenges.push(
            type === 'http-01'
              ? http01Challenge(authz.identifier.value, challenge.token, value, challenge.url, authz.url)
              : {
                  identifier: `${authz.wildcard ? '*.' : ''}${authz.identifier.value}`,
                  name: challengeName(authz.identifier.value),
                  value,
                  challengeUrl: challenge.url,
                  authorizationUrl: authz.url,
                },
          );
        }
        return { url: order.url, finalize: order.finalize, hostnames: input.hostnames, challenges };
      } catch (err) {
        throw acmeFailure(err, input.directoryUrl);
      }
    },

    /**
     * True once every one of our DNS nodes answers every challenge TXT (what the CA's resolver will ask), or every
     * public resolver (`via: 'resolvers'`: a TXT an acme-dns server serves).
     */
    async acmeChallengesServed(
      challenges: Array<{ name: string; value: string }>,
      via: 'nodes' | 'resolvers' = 'nodes',
    ): Promise<{ served: boolean; missing: string[] }> {
      const missing: string[] = [];
      const resolvers = via === 'resolvers' ? deps.resolvers : deps.dnsNodes;
      for (const ch of challenges) {
        const seen = await observe({ resolvers, timeoutMs: deps.dnsTimeoutMs }, ch.name, 'TXT');
        for (const o of seen) if (!o.values.includes(ch.value)) missing.push(`${o.resolver} ${ch.name}`);
      }
      return { served: missing.length === 0, missing };
    },

    /** Tells the CA the challenges are ready and waits until it has validated each authorization. */
    async acmeCompleteChallenges(input: { directoryUrl: string; challenges: AcmeChallenge[] }): Promise<void> {
      const c = await client(input.directoryUrl).catch((err: unknown) => {
        throw acmeFailure(err, input.directoryUrl);
      });
      for (const ch of input.challenges) {
        const challenge = { type: ch.type ?? 'dns-01', url: ch.challengeUrl, status: 'pending', token: '' } as const;
        const authz = { url: ch.authorizationUrl } as acme.Authorization;
        // A run that died after answering finds the challenge no longer pending: the CA refuses a second answer, and
        // the authorization's status below tells how the first one went.
        await c.completeChallenge(challenge as never).catch(() => undefined);
        try {
          await c.waitForValidStatus(authz);
        } catch (err) {
          const why = describeAcmeError(err, input.directoryUrl);
          if (why.startsWith('certificate issuer unavailable')) throw ApplicationFailure.retryable(why, 'AcmeError');
          // An invalid authorization stays invalid: this order cannot succeed, a new one is needed.
          throw ApplicationFailure.nonRetryable(
            `validation of ${ch.identifier} failed: ${why}`,
            'AcmeValidationFailed',
          );
        }
      }
    },

    /**
     * Makes the certificate key and CSR, finalizes the order, downloads the chain and hands both to the control plane,
     * in one activity: the key exists only here. An order already finalized by a run that died before storing cannot
     * be finalized again with a new key: non-retryable, the workflow starts a new order.
     */
    async acmeFinalizeAndStore(input: {
      domain: string;
      directoryUrl: string;
      order: AcmeOrder;
    }): Promise<IssuedCertificate> {
      let certificatePem: string;
      let privateKeyPem: string;
      try {
        const c = await client(input.directoryUrl);
        const order = { url: input.order.url, finalize: input.order.finalize } as acme.Order;
        const current = await c.getOrder(order);
        if (current.status !== 'ready')
          throw ApplicationFailure.nonRetryable(`the order is ${current.status}, not ready`, 'AcmeOrderNotReady');
        const [key, csr] = await acme.crypto.createCsr(
          { altNames: input.order.hostnames, commonName: input.order.hostnames[0] },
          await acme.crypto.createPrivateEcdsaKey('P-256'),
        );
        const finalized = await c.finalizeOrder(current, csr);
        const valid = await c.waitForValidStatus(finalized);
        certificatePem = await c.getCertificate(valid);
        privateKeyPem = key.toString();
      } catch (err) {
        throw acmeFailure(err, input.directoryUrl);
      }
      const info = acme.crypto.readCertificateInfo(certificatePem);
      // The key exists only in this call: a control plane that is restarting is waited for here (up to ~2 min), since
      // a retry of the activity could not finalize the order again.
      const store = () =>
        post<{ id: number }>(`/internal/domains/${encodeURIComponent(input.domain)}/acme/certificate`, {
          certificate: certificatePem,
          private_key: privateKeyPem,
          hostnames: input.order.hostnames,
        });
      let stored: { id: number } | null = null;
      for (let attempt = 1; ; attempt++) {
        try {
          stored = await store();
          break;
        } catch (err) {
          if (err instanceof ApplicationFailure || attempt >= 12) throw err;
          await new Promise((r) => setTimeout(r, Math.min(1000 * attempt, 10_000)));
        }
      }
      if (!stored) throw ApplicationFailure.nonRetryable('the domain no longer exists', 'DomainGone');
      return {
        id: stored.id,
        notBeforeMs: info.notBefore.getTime(),
        notAfterMs: info.notAfter.getTime(),
        hostnames: input.order.hostnames,
      };
    },
  };
}
