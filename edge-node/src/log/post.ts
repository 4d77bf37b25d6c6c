// How a node's reports reach the control plane (request logs: shipper.ts; cache inventories: ../cache/inventory.ts):
// one POST of a msgpack body with the node token, acknowledged by a 2xx; and the wait before the next attempt.
import { hostname } from 'node:os';
import { request } from 'undici';

/** Sends one packed report; throws unless the control plane answered 2xx. */
export async function postReport(url: string, token: string, body: Buffer): Promise<void> {
  const res = await request(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/x-msgpack', authorization: `Bearer ${token}` },
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  await res.body.dump();
  if (res.statusCode >= 300) throw new Error(`control plane answered ${res.statusCode}`);
}

const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 60_000;

/** When to try again after `failures` failures in a row: 1 s doubling to 60 s, with ±20 % jitter. */
export function retryAt(failures: number): number {
  const wait = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(failures - 1, 16));
  return Date.now() + wait * (0.8 + 0.4 * Math.random());
}

/**
 * This process's name in what it reports (request logs, cache inventories, the `node` of analytics and cache reads):
 * host name and process id, so that processes of several machines never share one, and each worker (its own cache,
 * its own log buffer) has its own.
 */
export function nodeName(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9.-]/g, '-')
    .slice(0, 64);
  return `edge-${host}-${process.pid}`;
}
