// SSL routes: GET and POST /domains/{domain}/ssl/, POST ssl/parse, and the certificates of the domain (list, choose
// the one the edge serves, delete an uploaded one). Writes go through service.ts (changeDomain).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { ApiError } from '../../errors.js';
import { errorResponses, idSegment, MessageBody } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import acmeDnsRoutes from './acme-dns-routes.js';
import { presentCertificate, presentSslInfo } from './present.js';
import {
  CertificateList,
  CertificateParams,
  CertificateParse,
  Certificate,
  CustomCertificateResult,
  CustomCertificateUpload,
  ParsedCertificate,
  SslInfo,
} from './schemas.js';
import {
  chooseCertificate,
  deleteCertificate,
  getForDomain,
  listForDomain,
  parseForDomain,
  resealForNodeToken,
  sslStatus,
  unchooseCertificate,
  uploadCertificate,
} from './service.js';

export default async function sslRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['ssl'];
  const base = '/domains/:domain/ssl';
  await acmeDnsRoutes(fastify);

  // A process started with another node token re-seals the certificate keys nodes receive (decisions.md).
  app.addHook('onReady', async () => {
    try {
      const n = await resealForNodeToken(app);
      if (n > 0) app.log.warn({ domains: n }, 'node token changed: certificate keys re-sealed for nodes');
    } catch (err) {
      app.log.error({ err }, 'certificate keys could not be re-sealed for the node token');
    }
  });

  app.get(
    `${base}/`,
    {
      schema: {
        summary: 'SSL status: the served certificate, issuance state and hostnames not covered yet',
        tags,
        params: DomainParams,
        response: { 200: SslInfo, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return presentSslInfo(await sslStatus(app.db, domain));
    },
  );

  app.post(
    `${base}/`,
    {
      schema: {
        summary: 'Upload a custom certificate (leaf and intermediates, private key, hostnames)',
        description:
          'Needs ssl.manage and a plan with custom_ssl_enabled. 400: missing fields, unparseable PEM, key/certificate ' +
          'mismatch, expired certificate, chain out of order or incomplete, hostname not covered; 409: the certificate ' +
          'is already on the domain, or the domain is disabled. The edge serves it from the next config entry on.',
        tags,
        params: DomainParams,
        body: CustomCertificateUpload,
        response: { 200: CustomCertificateResult, ...errorResponses(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      const row = await uploadCertificate(app, domain, request.body);
      const { served } = await getForDomain(app.db, domain.id, row.id);
      return { message: 'certificate uploaded', certificate: presentCertificate(row, served) };
    },
  );

  app.post(
    `${base}/parse`,
    {
      schema: {
        summary: 'Parse a certificate: subject, issuer, validity, SANs, the names eligible on this domain',
        description: 'Nothing is installed. Any role with write access (not viewer).',
        tags,
        params: DomainParams,
        body: CertificateParse,
        response: { 200: ParsedCertificate, ...errorResponses(400, 403, 404, 413, 415) },
      },
    },
    async (request) => {
      const { domain, role } = await loadDomain(request, request.params.domain, 'domain.view');
      if (role === 'viewer') throw new ApiError('CP_ERR_ROLE', 'your role (viewer) has no write access on this domain');
      return parseForDomain(app.db, domain, request.body.certificate);
    },
  );

  app.get(
    `${base}/certificates/`,
    {
      schema: {
        summary: 'List the certificates of the domain (uploaded and issued)',
        tags,
        params: DomainParams,
        response: { 200: CertificateList, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const { rows, served } = await listForDomain(app.db, domain.id);
      return { certificates: rows.map((r) => presentCertificate(r, served.get(r.id) ?? [])) };
    },
  );

  app.post(
    `${base}/certificates/${idSegment('id')}/choose`,
    {
      schema: {
        summary: 'Choose the certificate the edge serves',
        description:
          'The chosen certificate wins every hostname it covers (wildcards included) over the others; one per domain. ' +
          '400 when it has expired.',
        tags,
        params: CertificateParams,
        response: { 200: Certificate, ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      const { row, served } = await chooseCertificate(app, domain, request.params.id);
      return presentCertificate(row, served);
    },
  );

  app.delete(
    `${base}/certificates/${idSegment('id')}/choose`,
    {
      schema: {
        summary: 'Withdraw the choice of a certificate (the automatic order applies again)',
        description:
          'Automatic order: for each hostname a certificate naming it exactly before a wildcard, uploaded before issued, ' +
          'newest first. 404 when the certificate is not the chosen one.',
        tags,
        params: CertificateParams,
        response: { 200: MessageBody, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      await unchooseCertificate(app, domain, request.params.id);
      return { message: 'certificate no longer chosen' };
    },
  );

  app.delete(
    `${base}/certificates/${idSegment('id')}`,
    {
      schema: {
        summary: 'Delete an uploaded certificate',
        description: 'Issued certificates are renewed by the service and cannot be deleted (400).',
        tags,
        params: CertificateParams,
        response: { 200: MessageBody, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      await deleteCertificate(app, domain, request.params.id);
      return { message: 'certificate deleted' };
    },
  );
}
