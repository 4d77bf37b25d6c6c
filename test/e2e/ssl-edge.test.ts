// Issue 11 items 2 and 3 through running processes: a certificate uploaded through the API (made here, with a CA made
// here) reaches the edge through the config log, and a TLS client that trusts only that CA fetches the proxied
// hostname over HTTPS; choosing another certificate and deleting them changes what the edge serves, without a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { chainFor, makeCa, sign } from '../helpers/certs.js';
import { startControlPlane } from './sync-harness.js';
import { startEdgeNodeProcess, waitUntil } from './edge-harness.js';

interface Fetched {
  status: number;
  body: string;
  fingerprint: string;
}

/** GET https://host/path at the edge, trusting only `ca` (the system store is not used): rejects when it fails to verify. */
function fetchTrusting(port: number, host: string, path: string, ca: string): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, servername: host, path, headers: { host }, ca, agent: false, timeout: 5000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body,
            fingerprint: (res.socket as TLSSocket).getPeerCertificate().fingerprint256,
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * waitUntil, but the probe must pass `times` times in a row: with EDGE_WORKERS=2 each new connection may land on
 * either worker, and each applies the change on its own.
 */
async function settled<T>(what: string, probe: () => Promise<T | undefined>, times = 6): Promise<T> {
  let streak = 0;
  return waitUntil(what, async () => {
    const v = await probe().catch(() => undefined);
    streak = v === undefined ? 0 : streak + 1;
    return streak >= times ? v : undefined;
  });
}

test(
  'custom certificates: uploaded, served by SNI over verified HTTPS, chosen, deleted; the edge follows',
  { timeout: 300_000 },
  async (t) => {
    const origin = await startStubOrigin('tls-origin');
    t.after(() => origin.close());
    const cp = await startControlPlane('ssl-edge');
    t.after(() => cp.stop());
    const domain = 'ssl-edge.example';
    const www = `www.${domain}`;
    await cp.api('POST', '/domains/', { name: domain });
    await cp.restart(() => cp.cli('plan', 'override', domain, 'custom_ssl_enabled', 'true'));
    const proxy = (name: string) =>
      cp.api('POST', `/domains/${domain}/records/`, {
        name,
        type: 'A',
        destination: '127.0.0.1',
        proxied: true,
        scheme: 'Http',
        port: origin.port,
      });
    await proxy('www');
    // Two workers: each installs the certificates itself (key files named per process, removed once loaded).
    const edge = await startEdgeNodeProcess(cp, { EDGE_WORKERS: '2' });
    t.after(() => edge.stop());

    // Certificate 1: ECDSA leaf for www under an intermediate under a root made here.
    const first = chainFor([www]);
    const up1 = await cp.api<{ certificate: { id: number; fingerprint_sha256: string } }>(
      'POST',
      `/domains/${domain}/ssl/`,
      {
        certificate: `${first.leaf.certPem}${first.intermediate.certPem}${first.root.certPem}`,
        private_key: first.leaf.keyPem,
        hostnames: [www],
      },
    );
    const fp = (hex: string) => hex.toUpperCase().match(/../g)!.join(':');
    const served1 = await settled('the uploaded certificate at the edge', async () => {
      const r = await fetchTrusting(edge.httpsPort, www, '/one', first.root.certPem).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    });
    assert.equal(served1.body, 'origin tls-origin /one');
    assert.equal(served1.fingerprint, fp(up1.certificate.fingerprint_sha256));
    assert.equal(origin.seen.at(-1)!.headers['x-forwarded-proto'], 'https');

    // Certificate 2: an RSA wildcard from another root. Uploaded, it serves only names no other certificate lists
    // (www stays with its exact certificate); chosen, it wins www too.
    const root2 = makeCa('Second Root CA');
    const wild = sign(root2, [`*.${domain}`], { kind: 'rsa' });
    const up2 = await cp.api<{ certificate: { id: number; fingerprint_sha256: string } }>(
      'POST',
      `/domains/${domain}/ssl/`,
      { certificate: `${wild.certPem}${root2.certPem}`, private_key: wild.keyPem, hostnames: [`*.${domain}`] },
    );
    await proxy('api');
    const api = await settled('the wildcard for api', async () => {
      const r = await fetchTrusting(edge.httpsPort, `api.${domain}`, '/api', root2.certPem).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    });
    assert.equal(api.fingerprint, fp(up2.certificate.fingerprint_sha256));
    assert.equal((await fetchTrusting(edge.httpsPort, www, '/still', first.root.certPem)).status, 200);

    await cp.api('POST', `/domains/${domain}/ssl/certificates/${up2.certificate.id}/choose`);
    const chosen = await settled('the chosen wildcard for www', async () => {
      const r = await fetchTrusting(edge.httpsPort, www, '/two', root2.certPem).catch(() => undefined);
      // …and no longer the first certificate.
      const old = await fetchTrusting(edge.httpsPort, www, '/x', first.root.certPem).then(
        () => false,
        () => true,
      );
      return r?.status === 200 && old ? r : undefined;
    });
    assert.equal(chosen.fingerprint, fp(up2.certificate.fingerprint_sha256));

    const info = await cp.api<{ status: string; certificate_id: number; key_type: string; coverage: unknown[] }>(
      'GET',
      `/domains/${domain}/ssl/`,
    );
    assert.equal(info.status, 'active');
    assert.equal(info.certificate_id, up2.certificate.id);
    assert.equal(info.key_type, 'rsa');
    assert.deepEqual(info.coverage, []);

    // Deleting the chosen one gives www back to the first; deleting that leaves the default (untrusted) certificate.
    await cp.api('DELETE', `/domains/${domain}/ssl/certificates/${up2.certificate.id}`);
    await settled('the first certificate again', async () => {
      const r = await fetchTrusting(edge.httpsPort, www, '/three', first.root.certPem).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    });
    await cp.api('DELETE', `/domains/${domain}/ssl/certificates/${up1.certificate.id}`);
    await settled('the default certificate', async () => {
      const err = await fetchTrusting(edge.httpsPort, www, '/four', first.root.certPem).then(
        () => undefined,
        (e: Error) => e,
      );
      return err ? err : undefined;
    });
    const list = await cp.api<Array<{ name: string; ssl: { status: string } }>>('GET', '/domains/');
    assert.equal(list.find((d) => d.name === domain)!.ssl.status, 'missing');
    // The key never left the control plane in the clear: the edge's log has no complaint about opening it.
    assert.doesNotMatch(edge.output(), /certificate key cannot be opened/);
  },
);
