// Uptime routes: monitors, settings and the webhook target, the signing secret, test events, the deliveries log,
// incidents and per-host status, all under /uptime/… with `?domain=<domain>`; plus the worker's /internal/uptime/….
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { requireNodeToken } from '../../auth/node-token.js';
import { ApiError } from '../../errors.js';
import { errorResponses, idSegment, MessageBody, Nullable, StringEnum } from '../../openapi/schemas.js';
import type { Permission } from '../../auth/permissions.js';
import {
  Delivery,
  DeliveryParams,
  DomainQuery,
  EnabledBody,
  HostStatus,
  Incident,
  Monitor,
  MonitorBody,
  MonitorList,
  MonitorParams,
  UptimeSettings,
  UptimeSettingsUpdate,
  WebhookConfig,
} from './schemas.js';
import {
  announceIncident,
  createMonitor,
  deleteMonitor,
  deliveryForWorker,
  DELIVERY_NOT_FOUND,
  getMonitor,
  getSettings,
  getWebhook,
  hostStatus,
  listDeliveries,
  listIncidents,
  listMonitors,
  recordAttempt,
  redeliver,
  rotateSigningSecret,
  sendTestEvent,
  setMonitorEnabled,
  updateMonitor,
  updateSettings,
} from './service.js';

const tags = ['uptime'];
const MonitorPath = `/uptime/monitors/${idSegment('monitorId')}`;

function domainOf(request: FastifyRequest, permission: Permission) {
  return loadDomain(request, (request.query as { domain: string }).domain, permission);
}

export default async function uptimeRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // ---- Monitors ----
  app.post(
    '/uptime/monitors',
    {
      schema: {
        summary: 'Create an uptime monitor',
        description:
          'A path-scoped watch running the same detector as the whole-host watch, with the domain’s thresholds. 400: domain query missing, malformed body, entry too long, a regex that does not compile, a monitor that narrows nothing, or the domain at its monitor cap',
        tags,
        querystring: DomainQuery,
        body: MonitorBody,
        response: { 200: Monitor, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return createMonitor(app, domain, request.body as Record<string, unknown>);
    },
  );

  app.get(
    '/uptime/monitors',
    {
      schema: {
        summary: 'List uptime monitors (with the per-domain cap)',
        tags,
        querystring: DomainQuery,
        response: { 200: MonitorList, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.view');
      return listMonitors(app, domain.id);
    },
  );

  app.get(
    MonitorPath,
    {
      schema: {
        summary: 'Get an uptime monitor',
        tags,
        querystring: DomainQuery,
        params: MonitorParams,
        response: { 200: Monitor, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.view');
      return getMonitor(app, domain.id, request.params.monitorId);
    },
  );

  app.put(
    MonitorPath,
    {
      schema: {
        summary: 'Update an uptime monitor',
        description: 'Omitted fields are kept; an explicit empty array clears a list',
        tags,
        querystring: DomainQuery,
        params: MonitorParams,
        body: MonitorBody,
        response: { 200: Monitor, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return updateMonitor(app, domain, request.params.monitorId, request.body as Record<string, unknown>);
    },
  );

  app.delete(
    MonitorPath,
    {
      schema: {
        summary: 'Delete an uptime monitor',
        tags,
        querystring: DomainQuery,
        params: MonitorParams,
        response: { 200: MessageBody, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      await deleteMonitor(app, domain, request.params.monitorId);
      return { message: 'monitor deleted' };
    },
  );

  app.patch(
    `${MonitorPath}/enabled`,
    {
      schema: {
        summary: 'Enable or disable an uptime monitor',
        tags,
        querystring: DomainQuery,
        params: MonitorParams,
        body: EnabledBody,
        response: { 200: Monitor, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return setMonitorEnabled(app, domain, request.params.monitorId, request.body.enabled);
    },
  );

  // ---- Settings and webhook ----
  app.get(
    '/uptime/settings',
    {
      schema: {
        summary: 'Uptime settings: webhook target and detection thresholds',
        tags,
        querystring: DomainQuery,
        response: { 200: UptimeSettings, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.view');
      return getSettings(app, domain);
    },
  );

  app.put(
    '/uptime/settings',
    {
      schema: {
        summary: 'Save the webhook target and detection thresholds',
        tags,
        querystring: DomainQuery,
        body: UptimeSettingsUpdate,
        response: { 200: UptimeSettings, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return updateSettings(app, domain, request.body);
    },
  );

  app.get(
    '/uptime/webhook',
    {
      schema: {
        summary: 'The webhook configuration, including the signing secret',
        tags,
        querystring: DomainQuery,
        response: { 200: WebhookConfig, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return getWebhook(app, domain);
    },
  );

  app.post(
    '/uptime/webhook/secret',
    {
      schema: {
        summary: 'Generate a new webhook signing secret (the old one stops signing at once)',
        tags,
        querystring: DomainQuery,
        response: { 200: WebhookConfig, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return rotateSigningSecret(app, domain);
    },
  );

  app.post(
    '/uptime/webhook/test',
    {
      schema: {
        summary: 'Send a `test` event to the webhook',
        description:
          'Records a delivery of event `test` (incident_id 0) and answers it; the delivery runs in the background with the usual retries (see GET /uptime/webhook/deliveries). 400 when no webhook_url is saved; 429 when 20 deliveries of the domain are still pending',
        tags,
        querystring: DomainQuery,
        response: { 200: Delivery, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return sendTestEvent(app, domain);
    },
  );

  app.get(
    '/uptime/webhook/deliveries',
    {
      schema: {
        summary: 'Recent webhook deliveries (newest first), each with every attempt',
        tags,
        querystring: DomainQuery,
        response: { 200: Type.Array(Delivery), ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.view');
      return listDeliveries(app, domain);
    },
  );

  app.post(
    `/uptime/webhook/deliveries/${idSegment('deliveryId')}/redeliver`,
    {
      schema: {
        summary: 'Deliver a past delivery again (same body, a new delivery to the saved webhook_url)',
        tags,
        querystring: DomainQuery,
        params: DeliveryParams,
        response: { 200: Delivery, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await domainOf(request, 'domain.settings');
      return redeliver(app, domain, request.params.deliveryId);
    },
  );

  // ---- Incidents and status ----
  app.get(
    '/uptime/incidents',
    {
      schema: {
        summary: 'Uptime incidents (newest first, at most 100)',
        tags,
        querystring: DomainQuery,
        response: { 200: Type.Array(Incident), ...errorResponses(400, 404) },
      },
    },
    async (request) => listIncidents(app, (await domainOf(request, 'domain.view')).domain, false),
  );

  app.get(
    '/uptime/incidents/open',
    {
      schema: {
        summary: 'Open uptime incidents',
        tags,
        querystring: DomainQuery,
        response: { 200: Type.Array(Incident), ...errorResponses(400, 404) },
      },
    },
    async (request) => listIncidents(app, (await domainOf(request, 'domain.view')).domain, true),
  );

  app.get(
    '/uptime/status',
    {
      schema: {
        summary: 'Per-subdomain status: each monitored proxied host, up or down',
        tags,
        querystring: DomainQuery,
        response: { 200: Type.Array(HostStatus), ...errorResponses(400, 404) },
      },
    },
    async (request) => hostStatus(app, (await domainOf(request, 'domain.view')).domain),
  );

  await app.register(uptimeInternalRoutes);
}

/** The delivery workflow's calls (node token; hidden from the OpenAPI document). */
async function uptimeInternalRoutes(fastify: FastifyInstance) {
  requireNodeToken(fastify);
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/internal/uptime/deliveries/:deliveryId',
    { schema: { hide: true, params: DeliveryParams } },
    async (request) => {
      const d = await deliveryForWorker(app, request.params.deliveryId);
      if (!d) throw new ApiError('CP_ERR_NOT_FOUND', DELIVERY_NOT_FOUND);
      return d;
    },
  );
  app.post(
    '/internal/uptime/incidents/:incidentId/announce',
    {
      schema: {
        hide: true,
        params: Type.Object({ incidentId: Type.Integer({ minimum: 1 }) }),
        body: Type.Object({ event: StringEnum(['outage.opened', 'outage.resolved']) }),
      },
    },
    async (request) => {
      const r = await announceIncident(app, request.params.incidentId, request.body.event);
      if (!r) throw new ApiError('CP_ERR_NOT_FOUND', 'incident not found');
      return r;
    },
  );
  app.post(
    '/internal/uptime/deliveries/:deliveryId/attempts',
    {
      schema: {
        hide: true,
        params: DeliveryParams,
        body: Type.Object({
          attempt: Type.Integer({ minimum: 1, maximum: 100 }),
          started_at: Type.String({ format: 'date-time' }),
          status_code: Nullable(Type.Integer()),
          duration_ms: Type.Number({ minimum: 0 }),
          error: Nullable(Type.String()),
          outcome: StringEnum(['success', 'failure', 'refused']),
          final: Type.Boolean(),
        }),
      },
    },
    async (request) => {
      const r = await recordAttempt(app, request.params.deliveryId, request.body);
      if (!r) throw new ApiError('CP_ERR_NOT_FOUND', DELIVERY_NOT_FOUND);
      return r;
    },
  );
}
