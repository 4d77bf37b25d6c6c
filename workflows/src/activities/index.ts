// Activities of the domain lifecycle, built from their dependencies (resolvers, control-plane client).
import type { WorkflowsConfig } from '../config.js';
import { createDnsActivities } from './dns-lookup.js';
import { createControlPlaneActivities } from './control-plane.js';

export type ActivityDeps = Pick<WorkflowsConfig, 'dnsResolvers' | 'dnsTimeoutMs' | 'controlPlaneUrl' | 'nodeToken'>;

export function createActivities(deps: ActivityDeps) {
  return {
    ...createDnsActivities({ resolvers: deps.dnsResolvers, timeoutMs: deps.dnsTimeoutMs }),
    ...createControlPlaneActivities({ baseUrl: deps.controlPlaneUrl, nodeToken: deps.nodeToken }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
