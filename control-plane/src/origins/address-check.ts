// Write-time check of origin addresses (proxied records, origin_route, origin_pool): a literal that the edge would
// refuse (loopback, private, link-local, …, or an endpoint of the platform) is a 400 now rather than a 502 later.
// Names are checked by the edge where it connects, after resolution; only `localhost` names are known here.
import { isIP } from 'node:net';
import { AddressPolicy, type Refusal } from '@platform/shared/address-policy';
import type { ControlPlaneConfig } from '../config.js';

const policies = new WeakMap<object, AddressPolicy>();

/** The policy of this control plane: ALLOWED_PRIVATE_NETWORKS, and its own API and sync endpoints. */
export function originPolicy(config: Readonly<ControlPlaneConfig>): AddressPolicy {
  let p = policies.get(config);
  if (!p) {
    p = new AddressPolicy(config.allowedPrivateNetworks);
    if (config.apiPort > 0) p.addOwn({ address: config.apiHost, port: config.apiPort });
    if (config.syncPort > 0) p.addOwn({ address: config.syncHost, port: config.syncPort });
    policies.set(config, p);
  }
  return p;
}

const LOCALHOST = /^(.+\.)?localhost\.?$/i;

/**
 * Why an origin at `address` (IP literal or host name) on one of `ports` is refused, as a sentence starting with the
 * address; undefined when it is allowed (or a name that only the edge can judge).
 */
export function originAddressProblem(
  policy: AddressPolicy,
  address: string,
  ports: readonly number[],
): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  let refusal: Refusal | undefined;
  if (LOCALHOST.test(bare)) refusal = policy.refusal('127.0.0.1', ports[0]!);
  else if (isIP(bare) !== 0) for (const port of ports) refusal ??= policy.refusal(bare, port);
  if (!refusal) return undefined;
  return (
    `${address} is ${refusal.reason}: origins must be public addresses ` +
    `(an operator may allow internal ranges with ALLOWED_PRIVATE_NETWORKS)`
  );
}
