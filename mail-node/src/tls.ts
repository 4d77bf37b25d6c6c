// STARTTLS certificates by SNI: the certificate the platform holds for the name the client asks for (the recipient
// domain's, as the edge serves it; the control plane answers GET /internal/email/tls/{name} for a domain with email
// routing on, its key sealed under the node token), else the node's default certificate. The name is a client's
// input: checked before any lookup, and the answers (found or not) are remembered in a bounded map, so a client
// cycling names costs at most one control-plane request per new name per `ttlMs`.
import { createSecureContext, type SecureContext } from 'node:tls';
import { openCertificateKey } from '@platform/shared/config';

/** Names remembered at once; beyond it the map is emptied (a flood of names cannot grow memory). */
const MAX_NAMES = 10_000;
/** A host name as SNI carries it (RFC 6066: no trailing dot, no IP literal): letters, digits, hyphens, dots. */
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))+$/;

export interface TlsLookup {
  (path: string): Promise<{ domain: string; certificate_pem: string; private_key_sealed: string } | undefined>;
}

export interface SniCertificates {
  /** smtp-server's SNICallback: the name's context, or undefined for the default certificate. */
  callback(servername: string, cb: (err: Error | null, ctx?: SecureContext) => void): void;
  /** Names remembered now (tests). */
  size(): number;
}

export function sniCertificates(opts: {
  lookup: TlsLookup;
  nodeToken: string;
  ttlMs: number;
  onError(err: unknown, servername: string): void;
}): SniCertificates {
  const known = new Map<string, { ctx: SecureContext | undefined; at: number }>();
  const pending = new Map<string, Promise<SecureContext | undefined>>();

  async function load(name: string): Promise<SecureContext | undefined> {
    const found = await opts.lookup(`/internal/email/tls/${encodeURIComponent(name)}`);
    if (!found) return undefined;
    const key = openCertificateKey(
      opts.nodeToken,
      found.domain,
      found.certificate_pem,
      Buffer.from(found.private_key_sealed, 'base64'),
    );
    return createSecureContext({ cert: found.certificate_pem, key });
  }

  return {
    size: () => known.size,
    callback(servername, cb) {
      const name = String(servername ?? '')
        .toLowerCase()
        .replace(/\.$/, '');
      if (!HOSTNAME.test(name)) return cb(null, undefined);
      const hit = known.get(name);
      if (hit && Date.now() - hit.at < opts.ttlMs) return cb(null, hit.ctx);
      let p = pending.get(name);
      if (!p) {
        p = load(name).then(
          (ctx) => {
            if (known.size >= MAX_NAMES) known.clear();
            known.set(name, { ctx, at: Date.now() });
            return ctx;
          },
          // The control plane unreachable: the default certificate now, asked again on the next connection.
          (err: unknown) => {
            opts.onError(err, name);
            return undefined;
          },
        );
        void p.finally(() => pending.delete(name));
        pending.set(name, p);
      }
      void p.then((ctx) => cb(null, ctx));
    },
  };
}
