// Checks a node's token (Authorization: Bearer …, X-Node-Token, or ?token=) in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';

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
