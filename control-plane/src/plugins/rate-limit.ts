// Per-key request rate limit (spec Limits: 300 per minute by default), answered 429 `rate limit exceeded`.
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, MESSAGES } from '../errors.js';

async function perKeyRateLimit(app: FastifyInstance, opts: { perMinute: number }) {
  await app.register(rateLimit, {
    global: true,
    max: opts.perMinute,
    timeWindow: 60_000,
    // RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and Retry-After (IETF httpapi draft names).
    enableDraftSpec: true,
    // The route-level hook runs after the authentication hook, so the principal is known here.
    keyGenerator: (request: FastifyRequest) => `key:${request.principal?.keyId ?? 0}`,
    // Public and internal routes (no API key) are not counted against any key.
    allowList: (request: FastifyRequest) => !request.principal,
    errorResponseBuilder: () => new ApiError(429, MESSAGES.rateLimited),
  });
}

export default fp(perKeyRateLimit, { name: 'rate-limit', dependencies: ['authenticate'] });
