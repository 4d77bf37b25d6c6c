// How a node's reports reach the control plane (request logs: shipper.ts; cache inventories: ../cache/inventory.ts):
// one POST of a msgpack body with the node token, acknowledged by a 2xx; the wait before the next attempt; and the
// loop running a reporter's steps one at a time.
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

export interface ReportLoop {
  /** Runs `step` after the steps queued before it; rejects with its error (the loop goes on). */
  run(step: () => Promise<void> | void): Promise<void>;
  /** Stops the timer; `run` still works. */
  stop(): void;
  /** Settles when the steps queued so far have run. */
  idle(): Promise<void>;
}

/**
 * Runs a reporter's steps one at a time, in order: `tick` every `everyMs` (skipped while the last tick still runs),
 * and whatever `run` is given; a step's error goes to `onError` (and to the caller of `run`).
 */
export function reportLoop(
  everyMs: number,
  tick: () => Promise<void> | void,
  onError: (err: unknown) => void,
): ReportLoop {
  let chain: Promise<void> = Promise.resolve();
  const run = (step: () => Promise<void> | void): Promise<void> => {
    const next = chain.then(step);
    chain = next.catch(onError);
    return next;
  };
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    run(tick)
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, everyMs);
  timer.unref();
  return { run, stop: () => clearInterval(timer), idle: () => chain };
}
