// The TLS handshake bench's data (bench/edge-node/tls.sh): one CA and COUNT leaves (ECDSA P-256, one host name each,
// t<i>.tls.bench.example.org) made now with the openssl command line; each as a domain in an edge node store
// (DATA_DIR/edge-node) with its key sealed under NODE_TOKEN, as the sync client would write it; and the same files
// for nginx as one server block per name (nginx-servers.conf, included by tls.sh).
// Usage: node --import tsx bench/edge-node/tls-setup.ts <DIR> <NODE_TOKEN> <COUNT> <NGINX_PORT>
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { X509Certificate } from 'node:crypto';
import { openNodeStore } from '@platform/shared/node-store';
import { sealCertificateKey } from '@platform/shared/config';
import { proxiedRecord, snapshot } from '../../edge-node/src/testing/harness.js';

const run = promisify(execFile);
const [dir, nodeToken, countText, nginxPortText] = process.argv.slice(2);
const count = Number(countText);
const nginxPort = Number(nginxPortText);
if (!dir || !nodeToken || !(count > 0 && count <= 10_000) || !nginxPort)
  throw new Error('usage: tls-setup.ts <DIR> <NODE_TOKEN> <COUNT 1..10000> <NGINX_PORT>');

const certDir = join(dir, 'certs');
mkdirSync(certDir, { recursive: true });
const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
const caKey = join(certDir, 'ca.key');
const caCrt = join(certDir, 'ca.crt');
await run('openssl', [
  'req',
  '-x509',
  ...ec,
  '-subj',
  '/CN=TLS Bench CA',
  '-days',
  '30',
  '-keyout',
  caKey,
  '-out',
  caCrt,
]);
const leafConf = join(certDir, 'leaf.cnf');
writeFileSync(
  leafConf,
  '[req]\ndistinguished_name=dn\nx509_extensions=leaf\n[dn]\n[leaf]\nbasicConstraints=critical,CA:FALSE\n' +
    'keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\n' +
    'authorityKeyIdentifier=keyid\n',
);

export const benchName = (i: number) => `t${i}.tls.bench.example.org`;

/** openssl for every leaf, four at a time (the machine is shared). */
const names = Array.from({ length: count }, (_, i) => benchName(i + 1));
let next = 0;
await Promise.all(
  Array.from({ length: 4 }, async () => {
    while (next < names.length) {
      const i = next++;
      const name = names[i]!;
      await run('openssl', [
        'req',
        '-x509',
        '-config',
        leafConf,
        '-CA',
        caCrt,
        '-CAkey',
        caKey,
        ...ec,
        '-subj',
        `/CN=${name}`,
        '-addext',
        `subjectAltName=DNS:${name}`,
        '-days',
        '30',
        '-keyout',
        join(certDir, `${i + 1}.key`),
        '-out',
        join(certDir, `${i + 1}.crt`),
      ]);
    }
  }),
);

const store = openNodeStore(join(dir, 'edge', 'edge-node'));
let version = store.version;
const servers: string[] = [];
for (let i = 1; i <= count; i++) {
  const name = benchName(i);
  const certificatePem = readFileSync(join(certDir, `${i}.crt`), 'utf8');
  const keyPem = readFileSync(join(certDir, `${i}.key`), 'utf8');
  const notAfterMs = Date.parse(new X509Certificate(certificatePem).validTo);
  const s = snapshot(name, {
    records: [proxiedRecord('@', 9)],
    certificates: [
      {
        hostnames: [name],
        certificatePem,
        privateKeyPem: '',
        notAfterMs,
        privateKeySealed: sealCertificateKey(nodeToken, name, certificatePem, keyPem),
      },
    ],
  });
  store.apply({ version: ++version, domain: name, deleted: false, snapshot: s });
  servers.push(
    `server { listen 127.0.0.1:${nginxPort} ssl; server_name ${name}; ` +
      `ssl_certificate ${join(certDir, `${i}.crt`)}; ssl_certificate_key ${join(certDir, `${i}.key`)}; return 200; }`,
  );
}
await store.close();
writeFileSync(join(dir, 'nginx-servers.conf'), servers.join('\n') + '\n');
writeFileSync(join(dir, 'names.txt'), names.join('\n') + '\n');
