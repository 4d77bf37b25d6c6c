// Certificate and key parsing with node:crypto: PEM blocks (bounded before any work), the leaf's names, the chain's
// order and completeness, the key's type, size and match. Every problem is a 400 naming what is wrong.
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { ApiError } from '../../errors.js';

/** Bounds of every input, checked before any parsing (schemas.ts repeats the sizes for the 400 of the schema). */
export const SSL_LIMITS = {
  /** The certificate field: a leaf and its intermediates. */
  certificatePemBytes: 64 * 1024,
  privateKeyPemBytes: 16 * 1024,
  /** Certificates in one chain (leaf included). */
  chainCertificates: 8,
  /** Hostnames chosen in one upload. */
  hostnames: 100,
  hostnameLength: 253,
  /** DNS names read from one leaf's subjectAltName. */
  sans: 1000,
  /** Certificates one domain holds (uploaded and issued). */
  certificatesPerDomain: 20,
  /** RSA modulus sizes accepted (a larger key slows every handshake of the edge). */
  rsaMinBits: 2048,
  rsaMaxBits: 8192,
} as const;

const EC_CURVES = new Set(['prime256v1', 'secp384r1']);

export const invalid = (message: string) => new ApiError('CP_ERR_INVALID_INPUT', message);

export interface PemBlock {
  label: string;
  /** The whole block, BEGIN and END lines included. */
  text: string;
}

/**
 * The PEM blocks of `text`, at most `max` (one more is a 400): found with indexOf, linear in the length; text between
 * blocks (openssl's "subject=" lines) is ignored.
 */
export function pemBlocks(text: string, max: number, what: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  let at = 0;
  for (;;) {
    const begin = text.indexOf('-----BEGIN ', at);
    if (begin < 0) break;
    const labelEnd = text.indexOf('-----', begin + 11);
    if (labelEnd < 0) throw invalid(`${what}: a PEM BEGIN line is not closed by "-----"`);
    const label = text.slice(begin + 11, labelEnd);
    if (label.length > 40 || !/^[A-Z0-9 ]+$/.test(label))
      throw invalid(`${what}: "${label.slice(0, 40)}" is not a PEM label`);
    const endLine = `-----END ${label}-----`;
    const end = text.indexOf(endLine, labelEnd + 5);
    if (end < 0) throw invalid(`${what}: the ${label} block has no "${endLine}" line`);
    if (blocks.length === max) throw invalid(`${what}: at most ${max} PEM blocks are accepted`);
    blocks.push({ label, text: text.slice(begin, end + endLine.length) });
    at = end + endLine.length;
  }
  if (blocks.length === 0) throw invalid(`${what} is not PEM: no "-----BEGIN" line found`);
  return blocks;
}

export interface ParsedChain {
  leaf: X509Certificate;
  chain: X509Certificate[];
  /** Leaf then intermediates, each as a normalised PEM block, joined by newlines: what the edge serves. */
  pem: string;
  /** DNS names of the leaf's subjectAltName, lower case, in order, without duplicates. */
  sans: string[];
  fingerprint: string;
}

/** Parses the certificate field: every block a CERTIFICATE, each a valid X.509 certificate. Order is not checked here. */
export function parseCertificates(text: string): ParsedChain {
  if (Buffer.byteLength(text) > SSL_LIMITS.certificatePemBytes)
    throw invalid(`certificate: at most ${SSL_LIMITS.certificatePemBytes} bytes of PEM are accepted`);
  const blocks = pemBlocks(text, SSL_LIMITS.chainCertificates, 'certificate');
  const chain = blocks.map((b, i) => {
    if (b.label !== 'CERTIFICATE')
      throw invalid(
        b.label.includes('PRIVATE KEY')
          ? 'certificate: holds a private key; send the key in private_key'
          : `certificate: block ${i + 1} is a ${b.label}, not a CERTIFICATE`,
      );
    try {
      return new X509Certificate(b.text);
    } catch {
      throw invalid(`certificate: block ${i + 1} is not a valid X.509 certificate`);
    }
  });
  const leaf = chain[0]!;
  return {
    leaf,
    chain,
    pem: chain.map((c) => c.toString().trim()).join('\n') + '\n',
    sans: dnsNames(leaf.subjectAltName ?? ''),
    fingerprint: fingerprintOf(leaf),
  };
}

/** Lower-case hex SHA-256 of the leaf's DER, without colons. */
export function fingerprintOf(cert: X509Certificate): string {
  return createHash('sha256').update(cert.raw).digest('hex');
}

const HOST_RE = /^(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A DNS name as a certificate or a request names it: lower case, no trailing dot; null when not a host name. */
export function normaliseHostname(raw: string): string | null {
  const h = raw.trim().toLowerCase().replace(/\.$/, '');
  return h.length > 0 && h.length <= SSL_LIMITS.hostnameLength && HOST_RE.test(h) ? h : null;
}

/**
 * The DNS entries of X509Certificate.subjectAltName ("DNS:a, DNS:b, IP Address:…"; Node quotes a value holding a
 * separator as a JSON string). Names that are not host names are dropped; at most SSL_LIMITS.sans are read.
 */
export function dnsNames(altNames: string): string[] {
  const out = new Set<string>();
  let i = 0;
  while (i < altNames.length && out.size < SSL_LIMITS.sans) {
    const colon = altNames.indexOf(':', i);
    if (colon < 0) break;
    const type = altNames.slice(i, colon);
    let value: string;
    let next: number;
    if (altNames[colon + 1] === '"') {
      // A JSON string: find its closing quote (skip escaped characters).
      let j = colon + 2;
      while (j < altNames.length && altNames[j] !== '"') j += altNames[j] === '\\' ? 2 : 1;
      try {
        value = JSON.parse(altNames.slice(colon + 1, j + 1)) as string;
      } catch {
        value = '';
      }
      next = altNames.indexOf(', ', j);
    } else {
      next = altNames.indexOf(', ', colon);
      value = altNames.slice(colon + 1, next < 0 ? altNames.length : next);
    }
    if (type === 'DNS') {
      const h = normaliseHostname(value);
      if (h) out.add(h);
    }
    if (next < 0) break;
    i = next + 2;
  }
  return [...out];
}

/** True when certificate name `pattern` (exact, or `*.` for one label) covers host `name`. */
export function covers(pattern: string, name: string): boolean {
  if (pattern === name) return true;
  if (!pattern.startsWith('*.') || name.startsWith('*.')) return false;
  const dot = name.indexOf('.');
  return dot > 0 && name.slice(dot + 1) === pattern.slice(2);
}

/** The `*.` wildcard that would cover `name` (null for a wildcard or a single label). */
export function parentWildcard(name: string): string | null {
  const dot = name.indexOf('.');
  return !name.startsWith('*.') && dot > 0 ? `*.${name.slice(dot + 1)}` : null;
}

/** The name in `names` that covers `name` (itself, else its parent's wildcard), or undefined. O(1). */
export function coveringName(names: ReadonlySet<string>, name: string): string | undefined {
  if (names.has(name)) return name;
  const w = parentWildcard(name);
  return w !== null && names.has(w) ? w : undefined;
}

/** Names of this domain among `sans`: the domain itself and names under it (wildcards included). */
export function eligibleNames(sans: readonly string[], domain: string): string[] {
  return sans.filter((s) => s === domain || s.endsWith(`.${domain}`));
}

export interface ParsedKey {
  key: KeyObject;
  type: 'rsa' | 'ecdsa';
  bits: number;
}

/** Parses the private key field: one unencrypted RSA or ECDSA (P-256, P-384) key. */
export function parsePrivateKey(text: string): ParsedKey {
  if (Buffer.byteLength(text) > SSL_LIMITS.privateKeyPemBytes)
    throw invalid(`private_key: at most ${SSL_LIMITS.privateKeyPemBytes} bytes of PEM are accepted`);
  // openssl ecparam -genkey writes EC PARAMETERS before the key: allowed, ignored.
  const blocks = pemBlocks(text, 2, 'private_key').filter((b) => b.label !== 'EC PARAMETERS');
  if (blocks.length !== 1 || !blocks[0]!.label.endsWith('PRIVATE KEY'))
    throw invalid('private_key must hold exactly one PRIVATE KEY block');
  if (blocks[0]!.label === 'ENCRYPTED PRIVATE KEY' || blocks[0]!.text.includes('Proc-Type: 4,ENCRYPTED'))
    throw invalid('private_key is encrypted with a passphrase; send it unencrypted');
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: blocks[0]!.text, format: 'pem' });
  } catch {
    throw invalid('private_key is not a valid PEM private key');
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < SSL_LIMITS.rsaMinBits || bits > SSL_LIMITS.rsaMaxBits)
      throw invalid(
        `private_key: RSA keys of ${SSL_LIMITS.rsaMinBits} to ${SSL_LIMITS.rsaMaxBits} bits are accepted, got ${bits}`,
      );
    return { key, type: 'rsa', bits };
  }
  if (key.asymmetricKeyType === 'ec') {
    const curve = details.namedCurve ?? '';
    if (!EC_CURVES.has(curve)) throw invalid(`private_key: ECDSA keys on P-256 or P-384 are accepted, got ${curve}`);
    return { key, type: 'ecdsa', bits: curve === 'prime256v1' ? 256 : 384 };
  }
  throw invalid(`private_key: RSA or ECDSA keys are accepted, got ${key.asymmetricKeyType ?? 'unknown'}`);
}

let roots: X509Certificate[] | undefined;
/** Node's bundled root certificates (Mozilla's store), parsed once. */
function publicRoots(): X509Certificate[] {
  return (roots ??= rootCertificates.map((r) => new X509Certificate(r)));
}

function signedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
}

/**
 * Checks the chain: the leaf first (not a CA), each certificate signed by the next, and complete: it ends at a
 * self-signed root or at a certificate one of the public roots signed. `complete` false checks the order only
 * (certificates from our own ACME issuer, whose root the caller trusts).
 */
export function checkChain(parsed: ParsedChain, opts: { complete: boolean }): void {
  const { chain } = parsed;
  if (parsed.leaf.ca) throw invalid('certificate: the first certificate is a CA certificate; put the leaf first');
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!signedBy(chain[i]!, chain[i + 1]!))
      throw invalid(
        `certificate: the chain is not in order: certificate ${i + 2} did not sign certificate ${i + 1} ` +
          `(issued by "${oneLine(chain[i]!.issuer)}"); put the leaf first, then each intermediate after the certificate it signed`,
      );
  }
  if (!opts.complete) return;
  const last = chain[chain.length - 1]!;
  if (signedBy(last, last)) return;
  if (publicRoots().some((r) => signedBy(last, r))) return;
  throw invalid(
    `certificate: the chain is incomplete: no certificate in it signed "${oneLine(last.issuer)}"; ` +
      'add the intermediate certificates after the leaf',
  );
}

/** The leaf and every intermediate must be valid now. */
export function checkValidity(parsed: ParsedChain, now: Date): void {
  parsed.chain.forEach((c, i) => {
    const until = new Date(c.validTo);
    if (until.getTime() <= now.getTime())
      throw invalid(
        i === 0
          ? `certificate expired on ${until.toISOString()}`
          : `certificate: intermediate ${i + 1} of the chain expired on ${until.toISOString()}`,
      );
  });
}

/** The key must be the leaf's. */
export function checkKeyMatches(parsed: ParsedChain, key: ParsedKey): void {
  if (!parsed.leaf.checkPrivateKey(key.key)) {
    const other = parsed.chain.findIndex((c, i) => i > 0 && c.checkPrivateKey(key.key));
    throw invalid(
      other > 0
        ? `private_key does not match the leaf certificate (it matches certificate ${other + 1}: put the leaf first)`
        : 'private_key does not match the certificate',
    );
  }
}

/** "CN=a\nO=b" → "CN=a, O=b"; an empty name (ACME CAs may issue leaves without a subject) → "". */
export function oneLine(dn: string | undefined): string {
  return (dn ?? '').split('\n').join(', ');
}
