// Activities of the domain lifecycle, built from their dependencies (resolvers, control-plane client).
import type { WorkflowsConfig } from '../config.js';
import { createDnsActivities } from './dns-lookup.js';
import { createControlPlaneActivities } from './control-plane.js';
import { createWebhookActivities } from '../uptime/webhook-activities.js';
import { createAcmeActivities } from './acme.js';
import { createAcmeHttp01Activities } from './acme-http01.js';
import { createBillingActivities } from './billing.js';
import { createAnalyticsActivities } from './analytics.js';
import { createEmailActivities } from './email.js';
import { createImportScanActivities } from './import-scan.js';

export type ActivityDeps = Pick<
  WorkflowsConfig,
  'dnsResolvers' | 'dnsTimeoutMs' | 'controlPlaneUrl' | 'nodeToken' | 'acmeDnsNodes'
> &
  Partial<Pick<WorkflowsConfig, 'acmeEdgeNodes'>> &
  Partial<Pick<WorkflowsConfig, 'allowedPrivateNetworks' | 'scanAxfrPort' | 'webhookRetryDelaysMs'>>;

/** host:port of a URL (the control plane's), as an endpoint of the platform. */
function urlEndpoint(url: string): { host: string; port: number }[] {
  try {
    const u = new URL(url);
    return [{ host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) || (u.protocol === 'https:' ? 443 : 80) }];
  } catch {
    return [];
  }
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createDnsActivities({ resolvers: deps.dnsResolvers, timeoutMs: deps.dnsTimeoutMs }),
    ...createControlPlaneActivities({ baseUrl: deps.controlPlaneUrl, nodeToken: deps.nodeToken }),
    ...createBillingActivities({ baseUrl: deps.controlPlaneUrl, nodeToken: deps.nodeToken }),
    ...createAnalyticsActivities({ baseUrl: deps.controlPlaneUrl, nodeToken: deps.nodeToken }),
    ...createEmailActivities({ baseUrl: deps.controlPlaneUrl, nodeToken: deps.nodeToken }),
    ...createWebhookActivities({
      controlPlaneUrl: deps.controlPlaneUrl,
      nodeToken: deps.nodeToken,
      allowedPrivateNetworks: deps.allowedPrivateNetworks ?? [],
      ...(deps.webhookRetryDelaysMs ? { retryDelaysMs: deps.webhookRetryDelaysMs } : {}),
    }),
    ...createAcmeActivities({
      baseUrl: deps.controlPlaneUrl,
      nodeToken: deps.nodeToken,
      dnsNodes: deps.acmeDnsNodes,
      resolvers: deps.dnsResolvers,
      dnsTimeoutMs: deps.dnsTimeoutMs,
    }),
    ...createImportScanActivities({
      resolvers: deps.dnsResolvers,
      timeoutMs: deps.dnsTimeoutMs,
      baseUrl: deps.controlPlaneUrl,
      nodeToken: deps.nodeToken,
      allowedPrivateNetworks: deps.allowedPrivateNetworks ?? [],
      axfrPort: deps.scanAxfrPort ?? 53,
      own: [...deps.acmeDnsNodes, ...urlEndpoint(deps.controlPlaneUrl)],
    }),
    ...createAcmeHttp01Activities({
      baseUrl: deps.controlPlaneUrl,
      nodeToken: deps.nodeToken,
      edgeNodes: deps.acmeEdgeNodes ?? [],
      timeoutMs: deps.dnsTimeoutMs,
    }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
