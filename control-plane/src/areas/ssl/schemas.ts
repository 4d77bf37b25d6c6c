// TypeBox schemas of the SSL routes: SslInfo, ParsedCertificate, CustomCertificateUpload, CustomCertificateResult,
// Certificate and CertificateList. No schema has a field for a private key in a response.
import { Type, type Static } from '@sinclair/typebox';
import { Id, Nullable, StringEnum } from '../../openapi/schemas.js';
import { SSL_LIMITS } from './pem.js';

const Timestamp = Type.String({ format: 'date-time' });
const Hostname = Type.String({ description: 'A host name, or a `*.` wildcard of one label' });

const certificateFields = {
  subject: Type.String({ description: 'Subject distinguished name, one line' }),
  issuer: Type.String({ description: 'Issuer distinguished name, one line' }),
  serial_number: Type.String({ description: 'Serial number, lower-case hex' }),
  fingerprint_sha256: Type.String({ description: "SHA-256 of the leaf's DER, lower-case hex" }),
  not_before: Timestamp,
  not_after: Timestamp,
  sans: Type.Array(Hostname, { description: "DNS names of the leaf's subjectAltName" }),
};

export const CertificateParse = Type.Object(
  {
    certificate: Type.String({
      minLength: 1,
      maxLength: SSL_LIMITS.certificatePemBytes,
      description: 'PEM: the leaf, optionally followed by its intermediates',
    }),
  },
  { title: 'CertificateParse', additionalProperties: false },
);

export const ParsedCertificate = Type.Object(
  {
    ...certificateFields,
    eligible: Type.Array(Hostname, {
      description: 'SANs that belong to this domain (the domain or names under it): the hostnames an upload may choose',
    }),
    default_selection: Type.Array(Hostname, {
      description:
        'The eligible names pre-selected: those covering a proxied hostname of the domain, or every eligible name when none does',
    }),
  },
  { title: 'ParsedCertificate' },
);
export type ParsedCertificateT = Static<typeof ParsedCertificate>;

export const CustomCertificateUpload = Type.Object(
  {
    certificate: Type.String({
      maxLength: SSL_LIMITS.certificatePemBytes,
      description:
        'PEM: the leaf first, then every intermediate in order (each signed by the next); the chain must end at a root ' +
        'of the public trust store or include its self-signed root',
    }),
    private_key: Type.String({
      maxLength: SSL_LIMITS.privateKeyPemBytes,
      description: "PEM, unencrypted: the leaf's RSA (2048 to 8192 bits) or ECDSA (P-256, P-384) key. Never returned",
    }),
    hostnames: Type.Array(Type.String({ maxLength: SSL_LIMITS.hostnameLength }), {
      maxItems: SSL_LIMITS.hostnames,
      description: 'Names the edge serves the certificate for, chosen from `eligible` of ssl/parse',
    }),
  },
  { title: 'CustomCertificateUpload', additionalProperties: false },
);

export const SSL_STATUSES = ['active', 'pending', 'failed', 'missing'] as const;
export const CERTIFICATE_STATUSES = ['active', 'inactive', 'expired'] as const;

export const Certificate = Type.Object(
  {
    id: Type.Integer(),
    source: StringEnum(['uploaded', 'issued'], { description: 'uploaded by a user, or issued through ACME' }),
    status: StringEnum([...CERTIFICATE_STATUSES], {
      description:
        'active: the edge serves it for served_hostnames; inactive: other certificates win all its names; expired',
    }),
    chosen: Type.Boolean({ description: 'Chosen with ssl/certificates/{id}/choose: it wins every name it covers' }),
    hostnames: Type.Array(Hostname, { description: 'Names it was installed for' }),
    served_hostnames: Type.Array(Hostname, { description: 'Names the edge serves it for now' }),
    ...certificateFields,
    key_type: StringEnum(['rsa', 'ecdsa']),
    key_size: Type.Integer({ description: 'Bits: RSA modulus or ECDSA curve size' }),
    created_at: Timestamp,
  },
  { title: 'Certificate' },
);
export type CertificateT = Static<typeof Certificate>;

export const CustomCertificateResult = Type.Object(
  { message: Type.String(), certificate: Certificate },
  { title: 'CustomCertificateResult' },
);

export const CertificateList = Type.Object(
  { certificates: Type.Array(Certificate, { description: 'Oldest first' }) },
  { title: 'CertificateList' },
);

export const CoverageEntry = Type.Object(
  {
    hostname: Hostname,
    state: StringEnum(['waiting', 'retrying'], {
      description: 'waiting: no attempt yet; retrying: an attempt failed and the next one is at next_retry_at',
    }),
    attempts: Type.Integer({ minimum: 0 }),
    last_error: Nullable(Type.String()),
    next_retry_at: Nullable(Timestamp),
  },
  { title: 'SslCoverageEntry' },
);

export const SslInfo = Type.Object(
  {
    status: StringEnum([...SSL_STATUSES], {
      description: 'active: a certificate is served; pending: an order runs; failed: the last order failed; missing',
    }),
    certificate_id: Nullable(Type.Integer({ description: 'The certificate described below (the first one served)' })),
    source: Nullable(StringEnum(['uploaded', 'issued'])),
    issuer: Nullable(Type.String()),
    subject: Nullable(Type.String()),
    not_before: Nullable(Timestamp),
    not_after: Nullable(Timestamp),
    sans: Type.Array(Hostname),
    served_hostnames: Type.Array(Hostname),
    key_type: Nullable(StringEnum(['rsa', 'ecdsa'])),
    key_size: Nullable(Type.Integer()),
    can_manual_issue: Type.Boolean({
      description:
        'POST ssl/issue would start an order now: SSL missing or failed, DNS not external, none running, cooldown over',
    }),
    next_manual_issue_at: Nullable(Timestamp),
    last_issue_attempt_at: Nullable(Timestamp),
    last_error: Nullable(Type.String({ description: 'Why the last issuance failed' })),
    coverage: Type.Array(CoverageEntry, {
      description: `Proxied hostnames no served certificate covers yet, with their retry state (at most 1000)`,
    }),
    coverage_total: Type.Integer({
      description: 'How many proxied hostnames are not covered (coverage lists 1000 at most)',
    }),
  },
  { title: 'SslInfo' },
);
export type SslInfoT = Static<typeof SslInfo>;

export const CertificateParams = Type.Object({
  domain: Type.String({ description: 'Domain name, percent-encoded when needed' }),
  id: Id('Certificate id'),
});
