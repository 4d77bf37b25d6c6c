// Certificate authorities, intermediates and leaves made at test time with the openssl command line (never a
// checked-in key): RSA or ECDSA keys, SANs, and expired certificates (openssl ca with explicit dates).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Issued {
  certPem: string;
  keyPem: string;
}

export type KeyKind = 'ec' | 'rsa' | 'rsa1024' | 'ed25519' | 'p521';

function keyArgs(kind: KeyKind): string[] {
  switch (kind) {
    case 'ec':
      return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
    case 'p521':
      return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-521'];
    case 'rsa':
      return ['-newkey', 'rsa:2048'];
    case 'rsa1024':
      return ['-newkey', 'rsa:1024'];
    case 'ed25519':
      return ['-newkey', 'ed25519'];
  }
}

function inDir<T>(run: (dir: string, file: (name: string) => string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'test-certs-'));
  try {
    return run(dir, (name) => join(dir, name));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const openssl = (args: string[], cwd?: string) => execFileSync('openssl', args, { stdio: 'pipe', cwd });

/** A self-signed root CA. */
export function makeCa(cn = 'Test Root CA', kind: KeyKind = 'ec'): Issued {
  return inDir((_dir, f) => {
    openssl([
      'req',
      '-x509',
      ...keyArgs(kind),
      '-nodes',
      '-keyout',
      f('k.pem'),
      '-out',
      f('c.pem'),
      '-days',
      '30',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    return { certPem: readFileSync(f('c.pem'), 'utf8'), keyPem: readFileSync(f('k.pem'), 'utf8') };
  });
}

export interface SignOptions {
  kind?: KeyKind;
  /** Days of validity from now (default 10). */
  days?: number;
  /** Make an intermediate CA instead of a leaf. */
  ca?: boolean;
  /** Dates for an already expired (or future) certificate, as YYYYMMDDHHMMSSZ. */
  startDate?: string;
  endDate?: string;
  cn?: string;
}

/** A certificate for `sans` (DNS names) signed by `issuer`. */
export function sign(issuer: Issued, sans: string[], opts: SignOptions = {}): Issued {
  return inDir((dir, f) => {
    writeFileSync(f('ca.pem'), issuer.certPem);
    writeFileSync(f('ca.key'), issuer.keyPem);
    const cn = opts.cn ?? sans[0] ?? 'Test Intermediate';
    openssl([
      'req',
      ...keyArgs(opts.kind ?? 'ec'),
      '-nodes',
      '-keyout',
      f('k.pem'),
      '-out',
      f('r.csr'),
      '-subj',
      `/CN=${cn}`,
    ]);
    const ext = opts.ca
      ? 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n'
      : `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n` +
        (sans.length > 0 ? `subjectAltName=${sans.map((s) => `DNS:${s}`).join(',')}\n` : '');
    writeFileSync(f('ext.cnf'), ext);
    if (opts.startDate || opts.endDate) {
      writeFileSync(f('index.txt'), '');
      writeFileSync(f('serial'), `${Date.now().toString(16).padStart(16, '0')}\n`);
      writeFileSync(
        f('ca.cnf'),
        `[ca]\ndefault_ca=d\n[d]\ndatabase=${f('index.txt')}\nnew_certs_dir=${dir}\nserial=${f('serial')}\n` +
          `default_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n`,
      );
      openssl([
        'ca',
        '-batch',
        '-config',
        f('ca.cnf'),
        '-cert',
        f('ca.pem'),
        '-keyfile',
        f('ca.key'),
        '-in',
        f('r.csr'),
        '-out',
        f('c.pem'),
        '-extfile',
        f('ext.cnf'),
        '-notext',
        '-startdate',
        opts.startDate ?? '20200101000000Z',
        '-enddate',
        opts.endDate ?? '20200201000000Z',
      ]);
    } else {
      openssl([
        'x509',
        '-req',
        '-in',
        f('r.csr'),
        '-CA',
        f('ca.pem'),
        '-CAkey',
        f('ca.key'),
        '-set_serial',
        `0x${Date.now().toString(16)}${Math.floor(Math.random() * 1e6).toString(16)}`,
        '-days',
        String(opts.days ?? 10),
        '-extfile',
        f('ext.cnf'),
        '-out',
        f('c.pem'),
      ]);
    }
    return { certPem: readFileSync(f('c.pem'), 'utf8'), keyPem: readFileSync(f('k.pem'), 'utf8') };
  });
}

/** A root, an intermediate under it and a leaf for `sans` under the intermediate. */
export function chainFor(sans: string[], kind: KeyKind = 'ec') {
  const root = makeCa();
  const intermediate = sign(root, [], { ca: true, cn: 'Test Intermediate CA' });
  const leaf = sign(intermediate, sans, { kind });
  return { root, intermediate, leaf };
}
