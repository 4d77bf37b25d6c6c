// Email routing routes: /domains/{domain}/email/… (status, enable, disable, lock, unlock, check, settings, catch-all,
// addresses, counts, activity, the owner's destinations, one-call setup, send, sent) and /email/destinations/… (the
// caller's own destinations, resend, delete, verify from the emailed link); plus the mail node's /internal/email/….
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { loadDomain, writeAs } from '../../auth/domain-access.js';
import { requireNodeToken } from '../../auth/node-token.js';
import { ApiError } from '../../errors.js';
import { ErrorBody, errorResponses, MessageBody, StringEnum } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import {
  ActivityList,
  ActivityQuery,
  AddressCreate,
  AddressList,
  AddressParams,
  AddressUpdate,
  CatchAll,
  CatchAllBody,
  CheckResult,
  Counts,
  Destination,
  DestinationCreate,
  DestinationList,
  DestinationParams,
  EmailAddress,
  RoutingState,
  RoutingStatus,
  SendBody,
  SendResult,
  SettingsBody,
  SetupBody,
  SetupResult,
  VerifyBody,
} from './schemas.js';
import * as email from './service.js';
import { attemptHeld, holdMessage } from './held.js';

const tags = ['email routing'];
const base = '/domains/:domain/email';
const addressPath = `${base}/addresses/:id(^\\d+$)`;

const domainParam = (r: FastifyRequest) => (r.params as { domain: string }).domain;

export default async function emailRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const view = (r: FastifyRequest) => loadDomain(r, domainParam(r), 'domain.view');
  const lock = (r: FastifyRequest) => writeAs(r, domainParam(r), 'domain.settings');

  app.get(
    `${base}/`,
    {
      schema: {
        summary: 'Email routing status',
        description: 'Whether email routing is on, the records it publishes and the DMARC record it suggests',
        tags,
        params: DomainParams,
        response: { 200: RoutingStatus, ...errorResponses(404) },
      },
    },
    async (r) => email.status(app, (await view(r)).domain),
  );

  app.post(
    `${base}/enable`,
    {
      schema: {
        summary: 'Enable email routing',
        description:
          'Makes the domain’s DKIM key (first time) and, for a managed zone, publishes MX, SPF and DKIM records (locked). 403: the plan lacks email_routing_enabled; 409: the zone has its own apex MX or SPF record',
        tags,
        params: DomainParams,
        response: { 200: RoutingStatus, ...errorResponses(403, 404, 409) },
      },
    },
    async (r) => {
      const { domain } = await loadDomain(r, r.params.domain, 'domain.settings');
      return email.enable(app, lock(r), domain.id, domain.name);
    },
  );

  app.post(
    `${base}/disable`,
    {
      schema: {
        summary: 'Disable email routing',
        description: 'Removes the managed records; addresses and destinations are kept',
        tags,
        params: DomainParams,
        response: { 200: RoutingStatus, ...errorResponses(400, 403, 404) },
      },
    },
    async (r) => email.disable(app, lock(r)),
  );

  for (const [action, locked] of [
    ['lock', true],
    ['unlock', false],
  ] as const)
    app.post(
      `${base}/${action}`,
      {
        schema: {
          summary: `${action === 'lock' ? 'Lock' : 'Unlock'} the managed email records`,
          description: 'Locked managed records are refused by the records API (409)',
          tags,
          params: DomainParams,
          response: { 200: RoutingState, ...errorResponses(400, 403, 404) },
        },
      },
      async (r) => email.setLocked(app, lock(r), locked),
    );

  app.post(
    `${base}/check`,
    {
      schema: {
        summary: 'Check the published email records',
        description: 'Against our own zone for a managed domain, against DNS for an external one',
        tags,
        params: DomainParams,
        response: { 200: CheckResult, ...errorResponses(400, 403, 404) },
      },
    },
    async (r) => email.check(app, (await loadDomain(r, r.params.domain, 'domain.settings')).domain),
  );

  app.put(
    `${base}/settings`,
    {
      schema: {
        summary: 'Email routing settings',
        tags,
        params: DomainParams,
        body: SettingsBody,
        response: { 200: RoutingState, ...errorResponses(400, 403, 404) },
      },
    },
    async (r) => email.updateSettings(app, lock(r), r.body),
  );

  app.get(
    `${base}/catch-all`,
    {
      schema: {
        summary: 'The catch-all rule',
        tags,
        params: DomainParams,
        response: { 200: CatchAll, ...errorResponses(400, 404) },
      },
    },
    async (r) => email.getCatchAll(app, (await view(r)).domain.id),
  );
  app.put(
    `${base}/catch-all`,
    {
      schema: {
        summary: 'Set the catch-all rule',
        description: 'Mail to any address without its own rule: dropped, or forwarded to one destination',
        tags,
        params: DomainParams,
        body: CatchAllBody,
        response: { 200: CatchAll, ...errorResponses(400, 403, 404) },
      },
    },
    async (r) => email.putCatchAll(app, lock(r), r.body),
  );

  app.get(
    `${base}/addresses/`,
    {
      schema: {
        summary: 'Custom addresses',
        tags,
        params: DomainParams,
        response: { 200: AddressList, ...errorResponses(404) },
      },
    },
    async (r) => email.listAddresses(app, (await view(r)).domain),
  );
  app.post(
    `${base}/addresses/`,
    {
      schema: {
        summary: 'Create a custom address',
        description: '403: max_email_rules reached; 409: the address exists',
        tags,
        params: DomainParams,
        body: AddressCreate,
        response: { 200: EmailAddress, ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (r) => email.createAddress(app, lock(r), r.body),
  );
  app.put(
    addressPath,
    {
      schema: {
        summary: 'Update a custom address',
        tags,
        params: AddressParams,
        body: AddressUpdate,
        response: { 200: EmailAddress, ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (r) => email.updateAddress(app, lock(r), r.params.id, r.body),
  );
  app.delete(
    addressPath,
    {
      schema: {
        summary: 'Delete a custom address',
        tags,
        params: AddressParams,
        response: { 200: MessageBody, ...errorResponses(400, 403, 404) },
      },
    },
    async (r) => email.deleteAddress(app, lock(r), r.params.id),
  );
  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const)
    app.post(
      `${addressPath}/${action}`,
      {
        schema: {
          summary: `${action === 'enable' ? 'Enable' : 'Disable'} a custom address`,
          tags,
          params: AddressParams,
          response: { 200: EmailAddress, ...errorResponses(400, 403, 404) },
        },
      },
      async (r) => email.setAddressEnabled(app, lock(r), r.params.id, enabled),
    );

  app.get(
    `${base}/counts`,
    {
      schema: {
        summary: 'Message counts',
        description: 'The last 24 hours by outcome, and today’s forwards and sends against the plan’s limits',
        tags,
        params: DomainParams,
        response: { 200: Counts, ...errorResponses(404) },
      },
    },
    async (r) => email.counts(app, (await view(r)).domain),
  );
  app.get(
    `${base}/activity`,
    {
      schema: {
        summary: 'Activity log',
        description:
          'Why each message was accepted, refused, forwarded, deferred or bounced: metadata only (envelope, verdicts, result), never content; newest first',
        tags,
        params: DomainParams,
        querystring: ActivityQuery,
        response: { 200: ActivityList, ...errorResponses(400, 404) },
      },
    },
    async (r) => email.activity(app, (await view(r)).domain.id, r.query, 'in'),
  );

  app.get(
    `${base}/destinations`,
    {
      schema: {
        summary: 'The domain owner’s destination addresses',
        tags,
        params: DomainParams,
        response: { 200: DestinationList, ...errorResponses(404) },
      },
    },
    async (r) => email.listDestinations(app, (await view(r)).domain.ownerId),
  );
  app.post(
    `${base}/destinations`,
    {
      schema: {
        summary: 'Add a destination address of the domain’s owner',
        description: 'The address is mailed a single-use verification link',
        tags,
        params: DomainParams,
        body: DestinationCreate,
        response: { 200: Destination, ...errorResponses(400, 403, 404) },
      },
    },
    async (r) =>
      email.addDestination(app, (await loadDomain(r, r.params.domain, 'domain.settings')).domain.ownerId, r.body.email),
  );

  app.post(
    `${base}/setup`,
    {
      schema: {
        summary: 'One-call setup',
        description: 'Enable, add the destination (mailed a link) and the first custom address in one call',
        tags,
        params: DomainParams,
        body: SetupBody,
        response: { 200: SetupResult, ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (r) => {
      const { domain } = await loadDomain(r, r.params.domain, 'domain.settings');
      return email.setup(app, () => lock(r), domain, r.body);
    },
  );

  app.post(
    `${base}/send`,
    {
      schema: {
        summary: 'Send an email',
        description:
          'From an address at the domain to a verified destination of its owner, DKIM-signed with the domain’s key. 403: the plan lacks email_sending_enabled or max_email_sends_per_day is reached',
        tags,
        params: DomainParams,
        body: SendBody,
        response: { 200: SendResult, ...errorResponses(400, 403, 404) },
      },
    },
    async (r) => email.send(app, (await loadDomain(r, r.params.domain, 'domain.settings')).domain, r.body),
  );
  app.get(
    `${base}/sent`,
    {
      schema: {
        summary: 'Sent email',
        tags,
        params: DomainParams,
        querystring: ActivityQuery,
        response: { 200: ActivityList, ...errorResponses(400, 404) },
      },
    },
    async (r) => email.activity(app, (await view(r)).domain.id, r.query, 'out'),
  );

  // ---- The caller's own destinations ----
  const me = (r: FastifyRequest) => r.principal.userId;
  app.get(
    '/email/destinations',
    { schema: { summary: 'My destination addresses', tags, response: { 200: DestinationList, ...errorResponses() } } },
    async (r) => email.listDestinations(app, me(r)),
  );
  app.post(
    '/email/destinations',
    {
      schema: {
        summary: 'Add a destination address',
        description: 'The address is mailed a single-use verification link',
        tags,
        body: DestinationCreate,
        response: { 200: Destination, ...errorResponses(400) },
      },
    },
    async (r) => email.addDestination(app, me(r), r.body.email),
  );
  app.post(
    '/email/destinations/:id(^\\d+$)/resend',
    {
      schema: {
        summary: 'Resend the verification mail',
        description: '409: already verified; 429: sent less than a minute ago',
        tags,
        params: DestinationParams,
        response: { 200: Destination, ...errorResponses(400, 404, 409) },
      },
    },
    async (r) => email.resendVerification(app, me(r), r.params.id),
  );
  app.delete(
    '/email/destinations/:id(^\\d+$)',
    {
      schema: {
        summary: 'Delete a destination address',
        tags,
        params: DestinationParams,
        response: { 200: MessageBody, ...errorResponses(400, 404) },
      },
    },
    async (r) => email.deleteDestination(app, me(r), r.params.id),
  );
  app.post(
    '/email/destinations/verify',
    {
      config: { public: true },
      schema: {
        summary: 'Verify a destination from its emailed link',
        description: 'No API key: the signed single-use token of the link is the credential. 409: the link expired',
        tags,
        security: [],
        body: VerifyBody,
        response: { 200: Destination, 400: ErrorBody, 409: ErrorBody, 429: ErrorBody },
      },
    },
    // Public routes count against the client address (authentication hook), as a wrong key does.
    async (r) => email.verifyDestination(app, r.body.token),
  );

  await app.register(emailInternalRoutes);
}

/** The mail node's calls (node token; hidden from the OpenAPI document). */
async function emailInternalRoutes(fastify: FastifyInstance) {
  requireNodeToken(fastify);
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const Addr = Type.String({ minLength: 0, maxLength: 320 });
  app.post(
    '/internal/email/recipient',
    { schema: { hide: true, body: Type.Object({ address: Addr, from: Addr }) } },
    async (r) => email.routeRecipient(app, r.body.address, r.body.from),
  );
  app.get(
    '/internal/email/dkim/:domain',
    { schema: { hide: true, params: Type.Object({ domain: Type.String({ maxLength: 253 }) }) } },
    async (r) => {
      const k = await email.dkimForNode(app, r.params.domain);
      if (!k) throw new ApiError('CP_ERR_NOT_FOUND', email.NOT_ENABLED);
      return k;
    },
  );
  app.get(
    '/internal/email/tls/:servername',
    {
      schema: {
        hide: true,
        params: Type.Object({
          servername: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9_.-]+$' }),
        }),
      },
    },
    async (r) => {
      const c = await email.tlsForNode(app, r.params.servername);
      if (!c) throw new ApiError('CP_ERR_NOT_FOUND', 'no certificate for this name');
      return c;
    },
  );
  app.post(
    '/internal/email/forwards/take',
    { schema: { hide: true, body: Type.Object({ domain: Type.String({ maxLength: 253 }) }) } },
    async (r) => email.takeForward(app, r.body.domain),
  );
  app.post(
    '/internal/email/forwards/give-back',
    { schema: { hide: true, body: Type.Object({ domain: Type.String({ maxLength: 253 }) }) } },
    async (r) => email.giveBackForward(app, r.body.domain),
  );
  const Short = Type.String({ maxLength: 512 });
  const Verdict = Type.String({ maxLength: 32 });
  const holdMax = email.emailConfig(app).holdMaxBytes;
  app.post(
    '/internal/email/held',
    {
      // The message travels base64 in JSON: 4/3 of the largest held message and room for the envelope.
      bodyLimit: Math.ceil(holdMax / 3) * 4 + 64 * 1024,
      schema: {
        hide: true,
        body: Type.Object({
          domain: Type.String({ maxLength: 253 }),
          mail_from: Addr,
          envelope_from: Addr,
          rcpt_to: Addr,
          destination: Addr,
          message_id: Short,
          spf: Verdict,
          dkim: Verdict,
          dmarc: Verdict,
          smtp_response: Short,
          raw: Type.String({ minLength: 1, maxLength: Math.ceil(holdMax / 3) * 4, pattern: '^[A-Za-z0-9+/]+=*$' }),
        }),
      },
    },
    async (r) => holdMessage(app, r.body),
  );
  app.post(
    '/internal/email/held/:id/attempt',
    {
      schema: {
        hide: true,
        params: Type.Object({ id: Type.String({ pattern: '^[0-9a-f]{32}$' }) }),
        body: Type.Object({ attempt: Type.Integer({ minimum: 2, maximum: 100 }), final: Type.Boolean() }),
      },
    },
    async (r) => attemptHeld(app, r.params.id, r.body.attempt, r.body.final),
  );
  app.post(
    '/internal/email/activity',
    {
      schema: {
        hide: true,
        body: Type.Object({
          entries: Type.Array(
            Type.Object({
              domain: Type.String({ maxLength: 253 }),
              mail_from: Addr,
              rcpt_to: Addr,
              destination: Addr,
              message_id: Short,
              size: Type.Integer({ minimum: 0 }),
              spf: Type.String({ maxLength: 32 }),
              dkim: Type.String({ maxLength: 32 }),
              dmarc: Type.String({ maxLength: 32 }),
              action: StringEnum(['forwarded', 'refused', 'deferred', 'bounced', 'dropped']),
              reason: Short,
              smtp_response: Short,
            }),
            { maxItems: 100 },
          ),
        }),
      },
    },
    async (r) => email.recordNodeActivity(app, r.body.entries),
  );
}
