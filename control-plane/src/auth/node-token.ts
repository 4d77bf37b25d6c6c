// Checks a node's token (Authorization: Bearer …, X-Node-Token, or ?token=) in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ensureNodeToken } from '@platform/shared/node-token';
import { ApiError } from '../errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Returns a checker bound to the configured node token. */
export function nodeTokenChecker(token: string): (presented: string | undefined) => boolean {
  const expected = digest(token);
  return (presented) => presented !== undefined && presented !== '' && timingSafeEqual(digest(presented), expected);
}

/** The token a request presents, from the first place that carries one. */
export function presentedToken(
  authorization: string,
  headerToken: string,
  queryToken: string | undefined,
): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization.trim());
  if (bearer) return bearer[1]!.trim();
  if (headerToken) return headerToken.trim();
  return queryToken || undefined;
}

/**
 * Refuses every request to `scope` that does not carry the node token as `Authorization: Bearer` (401
 * CP_ERR_INVALID_NODE_TOKEN). `app`: where the configuration is read (the scope itself unless given).
 */
export function requireNodeToken(scope: FastifyInstance, app: FastifyInstance = scope): void {
  const configured = (app.config as { nodeToken?: string }).nodeToken;
  const checkToken = nodeTokenChecker(ensureNodeToken(app.config.dataDir, configured));
  scope.addHook('onRequest', async (request: FastifyRequest) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!checkToken(bearer)) throw new ApiError('CP_ERR_INVALID_NODE_TOKEN', 'invalid node token');
  });
}
