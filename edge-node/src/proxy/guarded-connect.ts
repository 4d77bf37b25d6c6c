// undici connector that resolves the origin itself, checks the address against the AddressPolicy, and connects to
// that very address: the check and the connection can never see two different answers (no DNS rebinding).
import { connect, type Socket } from 'node:net';
import { buildConnector } from 'undici';
import { resolveAllowed, type AddressPolicy } from '@platform/shared/address-policy';
import { OriginError } from './origin-client/errors.js';

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

/**
 * The origin client's connector (origin-client/): the same guard, for a plain TCP connection. Resolves `host`, checks
 * every address against the policy and connects to the allowed one; `callback` gets the connected socket or the error
 * (AddressRefusedError, a lookup or connect failure, EDGE_ORIGIN_CONNECT_TIMEOUT).
 */
export function guardedSocket(
  policy: AddressPolicy,
  host: string,
  port: number,
  timeoutMs: number,
  callback: (err: Error | null, socket: Socket | null) => void,
): void {
  resolveAllowed(policy, host, port).then(
    (address) => {
      const socket = connect({ host: address, port, noDelay: true });
      const done = (err: Error | null) => {
        socket.off('connect', onConnect);
        socket.off('error', done);
        socket.off('timeout', onTimeout);
        socket.setTimeout(0);
        if (err) {
          socket.destroy();
          callback(err, null);
        } else callback(null, socket);
      };
      const onConnect = () => done(null);
      const onTimeout = () =>
        done(new OriginError('EDGE_ORIGIN_CONNECT_TIMEOUT', `no connection within ${timeoutMs} ms`));
      socket.once('connect', onConnect);
      socket.once('error', done);
      socket.setTimeout(timeoutMs, onTimeout);
    },
    (err: Error) => callback(err, null),
  );
}
