// Activities of the uptime webhook delivery: one signed POST per attempt, to the address the policy allowed and no
// other (resolved here, checked, then connected to: no DNS rebinding), redirects not followed, 5 s to answer; and the
// attempt's report to the control plane's deliveries log.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { AddressPolicy, isAddressRefused, resolveAllowed, type IpRange } from '@platform/shared/address-policy';
import { WEBHOOK_RETRY_DELAYS_MS } from './retry-schedule.js';
import { webhookSignature, WEBHOOK_USER_AGENT } from './sign.js';

export interface WebhookDeps {
  controlPlaneUrl: string;
  nodeToken: string;
  /** ALLOWED_PRIVATE_NETWORKS: ranges the operator lets webhooks (like origins) reach. */
  allowedPrivateNetworks: readonly IpRange[];
  /** The time a receiver has to answer (spec: 5 seconds). */
  timeoutMs?: number;
  /** UPTIME_WEBHOOK_RETRY_DELAYS_MS: the waits before the two retries (spec: 5 and 30 seconds). */
  retryDelaysMs?: readonly number[];
}

/** What one attempt did, as the deliveries log records it. */
export interface AttemptResult {
  attempt: number;
  started_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  outcome: 'success' | 'failure' | 'refused';
}

/** An attempt's result as the delivery workflow gets it: with the worker's retry delays, which it sleeps. */
export type SentAttempt = AttemptResult & { retryDelaysMs: readonly number[] };

interface DeliveryContext {
  id: number;
  url: string;
  state: string;
  payload: Record<string, unknown>;
  signing_secret: string;
}

/** The body fields in the order of the spec's table; sent_at is the signing instant. */
const BODY_FIELDS = [
  'event',
  'incident_id',
  'domain',
  'hostname',
  'monitor_id',
  'scope',
  'peak_error_pct',
  'started_at',
  'resolved_at',
  'duration_sec',
] as const;

/**
 * The body fields of `analytics.alert`, a saved analytics query's alert sent to a domain's uptime webhook
 * (control-plane areas/analytics/saved-queries.ts; docs/decisions.md).
 */
const ALERT_BODY_FIELDS = [
  'event',
  'saved_query_id',
  'name',
  'domain',
  'column',
  'op',
  'threshold',
  'value',
  'evaluated_at',
] as const;

export function webhookBody(payload: Record<string, unknown>, timestamp: number): string {
  const body: Record<string, unknown> = {};
  const fields = payload.event === 'analytics.alert' ? ALERT_BODY_FIELDS : BODY_FIELDS;
  for (const k of fields) body[k] = payload[k] ?? null;
  body.sent_at = new Date(timestamp * 1000).toISOString();
  return JSON.stringify(body);
}

/** The policy of this worker: ALLOWED_PRIVATE_NETWORKS, and the control plane it talks to is never a target. */
function webhookPolicy(deps: WebhookDeps): AddressPolicy {
  const policy = new AddressPolicy(deps.allowedPrivateNetworks);
  try {
    const cp = new URL(deps.controlPlaneUrl);
    const port = Number(cp.port) || (cp.protocol === 'https:' ? 443 : 80);
    policy.addOwn({ address: cp.hostname, port });
  } catch {
    // A control-plane URL that does not parse fails every call anyway.
  }
  return policy;
}

/** POSTs `body` to `url` at `address`; resolves with the status, or rejects on a connection error or timeout. */
function post(
  url: URL,
  address: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<IncomingMessage> {
  const https = url.protocol === 'https:';
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)({
      host: address,
      port: Number(url.port) || (https ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: { ...headers, host: url.host, 'content-length': String(Buffer.byteLength(body)) },
      agent: false,
      ...(https && isIP(hostname) === 0 ? { servername: hostname } : {}),
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    req.on('response', (res) => {
      clearTimeout(timer);
      resolve(res);
      // The answer's body is not needed: drop it and the connection.
      res.resume();
      res.on('error', () => undefined);
      setImmediate(() => req.destroy());
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}

export function createWebhookActivities(deps: WebhookDeps) {
  const policy = webhookPolicy(deps);
  const timeoutMs = deps.timeoutMs ?? 5_000;
  const retryDelaysMs = [...(deps.retryDelaysMs ?? WEBHOOK_RETRY_DELAYS_MS)];
  const auth = { authorization: `Bearer ${deps.nodeToken}` };

  async function controlPlane(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
    try {
      return await fetch(`${deps.controlPlaneUrl}${path}`, {
        method,
        headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(15_000),
      });
    } catch (err) {
      throw new Error(
        `control plane unreachable at ${deps.controlPlaneUrl}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  return {
    /**
     * One attempt of a delivery: reads it (and the current signing secret) from the control plane, signs the body
     * with the time of sending, and POSTs it. Null when the delivery is gone or no longer pending.
     */
    async sendUptimeWebhook(deliveryId: number, attempt: number): Promise<SentAttempt | null> {
      const res = await controlPlane('GET', `/internal/uptime/deliveries/${deliveryId}`);
      if (res.status === 404) return null;
      if (!res.ok) throw new Error(`control plane answered ${res.status} for delivery ${deliveryId}`);
      const d = (await res.json()) as DeliveryContext;
      if (d.state !== 'pending') return null;

      const started = Date.now();
      const result = (
        outcome: AttemptResult['outcome'],
        statusCode: number | null,
        error: string | null,
      ): SentAttempt => ({
        attempt,
        started_at: new Date(started).toISOString(),
        status_code: statusCode,
        duration_ms: Date.now() - started,
        error,
        outcome,
        retryDelaysMs,
      });
      let url: URL;
      try {
        url = new URL(d.url);
      } catch {
        return result('refused', null, `webhook_url ${d.url} is not a URL`);
      }
      const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
      let address: string;
      try {
        address = await resolveAllowed(policy, url.hostname, port);
      } catch (err) {
        // A disallowed address is refused without retrying; a name that does not resolve is retried.
        if (isAddressRefused(err)) return result('refused', null, `refused: ${err.message}`);
        return result('failure', null, `cannot resolve ${url.hostname}: ${(err as Error).message}`);
      }
      const timestamp = Math.floor(Date.now() / 1000);
      const body = webhookBody(d.payload, timestamp);
      const event = String(d.payload.event);
      try {
        const answer = await post(
          url,
          address,
          {
            'content-type': 'application/json',
            'user-agent': WEBHOOK_USER_AGENT,
            'x-service-event': event,
            'x-service-timestamp': String(timestamp),
            'x-service-signature': webhookSignature(d.signing_secret, timestamp, body),
          },
          body,
          timeoutMs,
        );
        const status = answer.statusCode ?? 0;
        if (status >= 200 && status < 300) return result('success', status, null);
        if (status >= 300 && status < 400)
          return result(
            'failure',
            status,
            `answered ${status} (redirects are not followed${answer.headers.location ? `; Location: ${String(answer.headers.location).slice(0, 200)}` : ''})`,
          );
        return result('failure', status, `answered ${status}`);
      } catch (err) {
        return result('failure', null, (err as Error).message);
      }
    },

    /** Records an incident's event for delivery (once per incident and event); its delivery id, or null: no webhook. */
    async announceUptimeIncident(
      incidentId: number,
      event: 'outage.opened' | 'outage.resolved',
    ): Promise<number | null> {
      const res = await controlPlane('POST', `/internal/uptime/incidents/${incidentId}/announce`, { event });
      if (res.status === 404) return null;
      if (!res.ok) throw new Error(`control plane answered ${res.status} to the announce of incident ${incidentId}`);
      return ((await res.json()) as { delivery_id: number | null }).delivery_id;
    },

    /** Records the attempt in the deliveries log (idempotent: the same attempt reported twice is stored once). */
    async recordUptimeWebhookAttempt(deliveryId: number, attempt: AttemptResult & { final: boolean }): Promise<void> {
      const res = await controlPlane('POST', `/internal/uptime/deliveries/${deliveryId}/attempts`, attempt);
      if (res.status === 404) return;
      if (!res.ok) throw new Error(`control plane answered ${res.status} to the attempt report of ${deliveryId}`);
    },
  };
}
