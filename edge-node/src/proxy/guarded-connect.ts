// undici connector that resolves the origin itself, checks the address against the AddressPolicy, and connects to
// that very address: the check and the connection can never see two different answers (no DNS rebinding).
import { buildConnector } from 'undici';
import { resolveAllowed, type AddressPolicy } from '@platform/shared/address-policy';

export function guardedConnector(policy: AddressPolicy, opts: buildConnector.BuildOptions): buildConnector.connector {
  const connect = buildConnector(opts);
  return (o, callback) => {
    const port = Number(o.port) || (o.protocol === 'https:' ? 443 : 80);
    // `host` keeps the name, so undici still derives the TLS servername (and certificate check) from it.
    resolveAllowed(policy, o.hostname, port).then(
      (address) => connect({ ...o, hostname: address }, callback),
      (err: Error) => callback(err, null),
    );
  };
}
