// The shape of an ACME http-01 challenge (RFC 8555 §8.3) as the control plane accepts it and the edge answers it: one
// definition of the bounds, so nothing the edge is asked for reaches further than an exact (hostname, token) pair.

/** Where CAs fetch http-01 key authorizations (RFC 8555 §8.3). */
export const ACME_HTTP01_PREFIX = '/.well-known/acme-challenge/';

/**
 * A token: base64url only (RFC 8555 §8.1; CAs issue 43 characters, 128+ bits of entropy), 16 to 128 characters.
 * Nothing else can be looked up through the path: no dot, slash, percent or other character passes.
 */
export const ACME_TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

/** A key authorization: the token, a dot, the base64url SHA-256 thumbprint of the account key (RFC 7638: 43). */
export function isKeyAuthorization(token: string, keyAuthorization: string): boolean {
  return (
    keyAuthorization.length === token.length + 44 &&
    keyAuthorization.startsWith(`${token}.`) &&
    /^[A-Za-z0-9_-]{43}$/.test(keyAuthorization.slice(token.length + 1))
  );
}

/** At most this many http-01 challenges are carried for one domain (an order of 100 names has 100 authorizations). */
export const MAX_ACME_HTTP_CHALLENGES = 100;
