// Where a request goes: the origin of a proxied record (spec "Scheme behaviour"), or one chosen by a routing rule.
import { isIP } from 'node:net';
import type { ZoneRecord } from '@platform/shared/config';

/** An origin to connect to. `auto` tries HTTPS on 443 and falls back to plain HTTP on 80. */
export interface OriginTarget {
  scheme: 'http' | 'https' | 'auto';
  /** IP address or host name to connect to. */
  address: string;
  port: number;
  /** Host header sent to the origin; also the TLS SNI when it is a name. */
  hostHeader: string;
  /** Seconds to wait for the origin's response head before answering 504. */
  timeoutSec: number;
}

const DEFAULT_TIMEOUT_SEC = 60;

function validPort(p: number): boolean {
  return Number.isInteger(p) && p >= 1 && p <= 65535;
}

/** Each record's origin as last computed, and the request host it was for. */
const recordOrigins = new WeakMap<ZoneRecord, { host: string; target: OriginTarget }>();

/**
 * The origin of a proxied A/AAAA/CNAME record as seen for request host `host`. The same object while the record and
 * host stay the same (records are immutable, replaced whole by a new snapshot): what is encoded once per origin
 * (forward.ts ProxyHeadTemplate) hangs on it. Never modify it.
 */
export function recordOrigin(record: ZoneRecord, host: string): OriginTarget {
  const known = recordOrigins.get(record);
  if (known !== undefined && known.host === host) return known.target;
  const target = computeOrigin(record, host);
  recordOrigins.set(record, { host, target });
  return target;
}

function computeOrigin(record: ZoneRecord, host: string): OriginTarget {
  const address = record.destination.endsWith('.') ? record.destination.slice(0, -1) : record.destination;
  let scheme: OriginTarget['scheme'];
  let port: number;
  if (record.scheme === 'Https') {
    scheme = 'https';
    port = validPort(record.port) ? record.port : 443;
  } else if (record.scheme === 'Http') {
    scheme = 'http';
    port = validPort(record.port) ? record.port : 80;
  } else {
    scheme = 'auto';
    port = 443;
  }
  // host_header overrides; otherwise `own` sends the visitor's Host and `target` the origin's name.
  let hostHeader = host;
  if (record.hostHeader) hostHeader = record.hostHeader;
  else if (record.hostHeaderMode === 'target' && isIP(address) === 0) hostHeader = address;
  return { scheme, address, port, hostHeader, timeoutSec: record.timeout > 0 ? record.timeout : DEFAULT_TIMEOUT_SEC };
}
