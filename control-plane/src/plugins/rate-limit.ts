// Request rate limits (spec Limits: 300 per minute per key by default), answered 429 `rate limit exceeded`:
// per API key on every route that takes one, and per client address for requests that present no valid credential.
// The counters are shared by every control-plane process on one Postgres server (rate-limit-store.ts).
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { formatIp, parseIp } from '@platform/shared/match';
import { ApiError, MESSAGES } from '../errors.js';
import {
  DatabaseCounterStore,
  keyBucket,
  MemoryCounterStore,
  RATE_WINDOW_MS as WINDOW_MS,
  type CounterStore,
  type WindowCount,
} from './rate-limit-store.js';

export interface RateLimitOptions {
  perMinute: number;
  /** Requests per minute per client address of callers without a valid credential. */
  anonymousPerMinute: number;
  /** Requests per minute per account of browser sessions (the web panel), counted apart from every key. */
  panelPerMinute: number;
  /** Keep the counters in the database (a Postgres server several processes share) instead of in memory. */
  shared: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts one request the route-level per-key limit never sees against the key `keyId` (a known key the
     * authentication refused for its account, method or path) or, without one, against the client address (no valid
     * key or node token, or a public route); throws 429 `rate limit exceeded` once over the budget.
     */
    limitRequest(request: FastifyRequest, reply: FastifyReply, keyId?: number): Promise<void>;
    /**
     * The per-key limit of a request whose key was read by its write (auth/authenticate.ts KEY_READ_BY_WRITE), which
     * the route-level hook let pass without a principal: counts it (unless the key lookup did), sets the same
     * RateLimit-* headers as that hook, and throws 429 `rate limit exceeded` once over the budget.
     */
    limitKey(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

/**
 * The budget an address draws on: IPv4 per address, IPv6 per /64 (what one subscriber line gets; limiting single
 * addresses of a /64 would limit nothing). IPv4-mapped IPv6 counts as IPv4.
 */
export function clientNetwork(ip: string): string {
  const parsed = parseIp(ip);
  if (!parsed) return ip;
  if (!parsed.v6) return formatIp(parsed);
  return `${formatIp({ v6: true, value: (parsed.value >> 64n) << 64n })}/64`;
}

/** Counter keys: one budget per API key (keyBucket), one per client network. */
const addressBucket = (request: FastifyRequest) => `ip:${clientNetwork(request.ip)}`;

/** Counter names of the web panel's browser traffic: one budget per account. */
const PANEL_BUCKET = 'panel:';

/** The window the key lookup counted this request in (authenticate.ts, on Postgres), once. */
function takeCounted(request: FastifyRequest): WindowCount | null {
  const window = request.keyWindow;
  request.keyWindow = null;
  return window;
}

async function rateLimits(app: FastifyInstance, opts: RateLimitOptions) {
  const store: CounterStore = opts.shared ? new DatabaseCounterStore(app.db) : new MemoryCounterStore();
  // Requests the key lookup already counted (request.keyWindow), by the per-request name keyGenerator gave them:
  // @fastify/rate-limit hands its store only that name.
  const counted = new Map<string, WindowCount>();
  let nextCounted = 0;
  // @fastify/rate-limit instantiates its store with `new`; a constructor returning an object yields that object.
  const fastifyStore = {
    incr(key: string, cb: (err: Error | null, res?: { current: number; ttl: number }) => void, timeWindow: number) {
      const window = counted.get(key);
      if (window) {
        counted.delete(key);
        cb(null, { current: window.count, ttl: window.ttlMs });
        return;
      }
      store.hit(key, timeWindow).then(
        (w) => cb(null, { current: w.count, ttl: w.ttlMs }),
        (err: Error) => cb(err),
      );
    },
    child() {
      return fastifyStore;
    },
  };

  await app.register(rateLimit, {
    global: true,
    max: (_request: FastifyRequest, key: string) =>
      key.startsWith(PANEL_BUCKET) ? opts.panelPerMinute : opts.perMinute,
    timeWindow: WINDOW_MS,
    store: function sharedStore() {
      return fastifyStore;
    } as unknown as never,
    // RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and Retry-After (IETF httpapi draft names).
    enableDraftSpec: true,
    // The route-level hook runs after the authentication hook, so the principal is known here.
    keyGenerator: (request: FastifyRequest) => {
      // Browser sessions (the panel): the account's panel budget, never a key's (spec Limits).
      if (request.principal?.sessionId !== undefined) return `${PANEL_BUCKET}${request.principal.userId}`;
      const bucket = keyBucket(request.principal?.keyId ?? 0);
      const window = takeCounted(request);
      if (!window || !request.principal) return bucket;
      const name = `${bucket}#${++nextCounted}`;
      counted.set(name, window);
      return name;
    },
    // Requests without a principal were counted by limitRequest in the authentication (public routes, refused
    // credentials) or came with a valid node token (internal routes: nodes and the workflow worker, not limited).
    allowList: (request: FastifyRequest) => !request.principal,
    errorResponseBuilder: () => new ApiError('CP_ERR_RATE_LIMITED', MESSAGES.rateLimited),
  });

  app.decorate('limitRequest', async (request: FastifyRequest, reply: FastifyReply, keyId?: number) => {
    const max = keyId === undefined ? opts.anonymousPerMinute : opts.perMinute;
    const w =
      (keyId !== undefined ? takeCounted(request) : null) ??
      (await store.hit(keyId === undefined ? addressBucket(request) : keyBucket(keyId), WINDOW_MS));
    if (w.count <= max) return;
    reply.header('retry-after', String(Math.ceil(w.ttlMs / 1000)));
    throw new ApiError('CP_ERR_RATE_LIMITED', MESSAGES.rateLimited);
  });

  app.decorate('limitKey', async (request: FastifyRequest, reply: FastifyReply) => {
    const max = opts.perMinute;
    const w = takeCounted(request) ?? (await store.hit(keyBucket(request.principal.keyId), WINDOW_MS));
    const resetSeconds = Math.ceil(w.ttlMs / 1000);
    reply.header('ratelimit-limit', max);
    reply.header('ratelimit-remaining', w.count > max ? 0 : max - w.count);
    reply.header('ratelimit-reset', resetSeconds);
    if (w.count <= max) return;
    reply.header('retry-after', resetSeconds);
    throw new ApiError('CP_ERR_RATE_LIMITED', MESSAGES.rateLimited);
  });

  // Ended windows are forgotten once per window (each process prunes; the statement is idempotent).
  const prune = setInterval(() => {
    store.prune(WINDOW_MS).catch((err: unknown) => app.log.warn({ err }, 'could not prune rate-limit counters'));
  }, WINDOW_MS);
  prune.unref();
  app.addHook('onClose', async () => clearInterval(prune));
}

export default fp(rateLimits, { name: 'rate-limit', dependencies: ['authenticate'] });
