// origin_route: send matching requests to another origin (address, port, scheme, host header/SNI).
import type { RuleBody } from '@platform/shared/match';
import type { OriginTarget } from '../proxy/origin.js';

export interface OriginRouteAction {
  address: string;
  port: number;
  scheme: 'http' | 'https';
  hostHeader: string;
}

export function compileOriginRoute(f: RuleBody): OriginRouteAction {
  const scheme = f.scheme === 'https' ? 'https' : 'http';
  return {
    address: String(f.address),
    port: Number(f.port ?? (scheme === 'https' ? 443 : 80)),
    scheme,
    hostHeader: String(f.host_header ?? ''),
  };
}

/** The target for a request that the record would have sent to `base` (the record's timeout is kept). */
export function routeTarget(a: OriginRouteAction, base: OriginTarget, requestHost: string): OriginTarget {
  return {
    scheme: a.scheme,
    address: a.address,
    port: a.port,
    hostHeader: a.hostHeader || requestHost,
    timeoutSec: base.timeoutSec,
  };
}
