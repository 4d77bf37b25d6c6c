// Sends a request to its origin and streams the answer back through uWS with backpressure, no body buffering
// (except a bounded copy when the answer is being stored in the cache).
import type { Readable } from 'node:stream';
import type { HttpResponse } from 'uWebSockets.js';
import type { RequestContext } from '../context.js';
import type { OriginTarget } from './origin.js';
import { isConnectFailure, isTimeout, type UpstreamPools } from './upstream.js';
import { writeHead, type ResponseOps } from './respond.js';

/** Hop-by-hop and edge-owned headers never copied between client and origin (RFC 9110 §7.6.1). */
const HOP_REQUEST = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'transfer-encoding', 'host',
  'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'forwarded', 'expect']);
const HOP_RESPONSE = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'transfer-encoding', 'content-length', 'date']);

/** What the phases decided about the answer before it arrives. */
export interface ResponsePlan {
  ops: ResponseOps | null;
  /** Called with the status: a body to send instead (error_page), or undefined to stream the origin's. */
  replaceBody(status: number): { body: Buffer; contentType: string } | undefined;
  /** Called with status and headers: max bytes to copy for the cache (0: do not store). */
  captureLimit(status: number, headers: Record<string, string | string[]>): number;
  /** Browser TTL to set as Cache-Control, 0 to leave the origin's. */
  browserTtlSec: number;
  /** The origin answered and the whole body was copied. */
  onStored(status: number, headers: [string, string][], body: Buffer, originHeaders: Record<string, string | string[]>): void;
  /** The origin could not be reached: return true when the phases answered (stale entry, failover); else 502/504 is sent. */
  onFailure(err: Error, connectFailure: boolean): boolean;
  /** Edge error answer (502/504) with error_page applied. */
  sendError(status: number): void;
  /** The exchange is over (answered, failed or aborted): log it. */
  done(): void;
}

/** Builds the flat header list for the origin: the client's headers minus hop-by-hop, then forwarding headers from the TCP peer. */
export function upstreamHeaders(ctx: RequestContext, target: OriginTarget, requestHeaders: [string, string][]): string[] {
  const out: string[] = ['host', target.hostHeader];
  for (const [k, v] of requestHeaders) if (!HOP_REQUEST.has(k)) out.push(k, v);
  // The client address is the TCP peer; whatever X-Forwarded-For the client sent is dropped, never trusted.
  out.push('x-forwarded-for', ctx.peer.text, 'x-real-ip', ctx.peer.text, 'x-forwarded-proto', ctx.scheme, 'x-forwarded-host', ctx.host);
  return out;
}

export function forward(res: HttpResponse, ctx: RequestContext, pools: UpstreamPools, target: OriginTarget, headers: string[],
  body: Readable | null, plan: ResponsePlan, retarget: () => OriginTarget | undefined): void {
  let scheme = pools.effectiveScheme(target);
  let current = target;
  const startedAt = performance.now();

  const attempt = () => {
    let headSent = false;
    let replaced: { body: Buffer; contentType: string } | undefined;
    let contentLength = -1;
    let capture: Buffer[] | null = null;
    let captureLeft = 0;
    let finished = false;
    let status = 0;
    let outHeaders: [string, string][] = [];
    let originHeaders: Record<string, string | string[]> = {};
    let controller: { abort(reason: Error): void; pause(): void; resume(): void } | undefined;
    let pending: Buffer | null = null;
    let answered = false;
    let headWritten = false;
    let pendingOffset = 0;

    const finish = () => { if (!finished) { finished = true; plan.done(); } };

    pools.dispatch(current, scheme, { method: ctx.method, path: ctx.upstreamQuery ? `${ctx.upstreamPath}?${ctx.upstreamQuery}` : ctx.upstreamPath, headers, body }, {
      onStart(c) {
        controller = c;
        ctx.abortUpstream = () => c.abort(new Error('client aborted'));
      },
      onHead(st, h) {
        status = st;
        originHeaders = h;
        ctx.upstreamMs = performance.now() - startedAt;
        if (ctx.aborted) { controller?.abort(new Error('client aborted')); return; }
        // A 5xx with a stale entry at hand: the stale entry is the answer (the origin body is read and dropped).
        if (st >= 500 && plan.onFailure(new Error(`origin answered ${st}`), false)) { answered = true; return; }
        replaced = st >= 400 ? plan.replaceBody(st) : undefined;
        if (replaced) return;
        outHeaders = [];
        for (const name in h) {
          if (HOP_RESPONSE.has(name)) continue;
          const v = h[name];
          if (Array.isArray(v)) for (const x of v) outHeaders.push([name, x]);
          else outHeaders.push([name, v]);
        }
        if (plan.browserTtlSec > 0) {
          for (let i = outHeaders.length - 1; i >= 0; i--) if (outHeaders[i][0] === 'cache-control') outHeaders.splice(i, 1);
          outHeaders.push(['cache-control', `max-age=${plan.browserTtlSec}`]);
        }
        const cl = h['content-length'];
        contentLength = typeof cl === 'string' && /^\d+$/.test(cl) ? Number(cl) : -1;
        const limit = ctx.method === 'GET' ? plan.captureLimit(st, h) : 0;
        if (limit > 0 && (contentLength < 0 || contentLength <= limit)) { capture = []; captureLeft = limit; }
        headSent = true;
        const noBody = ctx.method === 'HEAD' || st === 204 || st === 304;
        if (noBody || contentLength === 0) {
          res.cork(() => {
            writeHead(res, ctx, st, outHeaders, plan.ops);
            if (noBody) res.endWithoutBody(contentLength >= 0 ? contentLength : undefined); else res.end();
          });
          ctx.aborted = true;
        }
        // Otherwise the head goes out with the first body chunk: one write (one send) instead of two.
      },
      onData(chunk) {
        if (replaced || answered || ctx.aborted) return true;
        ctx.bytes += chunk.length;
        if (capture) {
          if (chunk.length > captureLeft) capture = null;
          else { capture.push(chunk); captureLeft -= chunk.length; }
        }
        let ok = true;
        res.cork(() => {
          if (!headWritten) { headWritten = true; writeHead(res, ctx, status, outHeaders, plan.ops); }
          if (contentLength >= 0) {
            const offset = res.getWriteOffset();
            const [written, done] = res.tryEnd(chunk, contentLength);
            if (done) ctx.aborted = true;
            else if (!written) { ok = false; pending = chunk; pendingOffset = offset; }
          } else ok = res.write(chunk);
        });
        if (!ok) {
          res.onWritable((offset) => {
            if (ctx.aborted) return true;
            if (pending) {
              const [written, done] = res.tryEnd(pending.subarray(offset - pendingOffset), contentLength);
              if (done) ctx.aborted = true;
              if (!written) return false;
              pending = null;
            }
            controller?.resume();
            return true;
          });
        }
        return ok;
      },
      onEnd() {
        if (answered) { finish(); return; }
        if (replaced) {
          const r = replaced;
          if (!ctx.aborted) {
            ctx.aborted = true;
            ctx.bytes = r.body.length;
            res.cork(() => {
              writeHead(res, ctx, status, [['content-type', r.contentType]], plan.ops);
              if (ctx.method === 'HEAD') res.endWithoutBody(r.body.length); else res.end(r.body);
            });
          }
        } else if (!ctx.aborted && headSent) {
          ctx.aborted = true;
          // A chunked answer ends here; a sized one that came up short is cut (the client sees a truncated body).
          res.cork(() => {
            if (!headWritten) { headWritten = true; writeHead(res, ctx, status, outHeaders, plan.ops); }
            if (contentLength < 0) res.end(); else res.close();
          });
        }
        if (capture) plan.onStored(status, outHeaders, Buffer.concat(capture), originHeaders);
        finish();
      },
      onError(err) {
        if (answered) { finish(); return; }
        if (headSent || replaced) {
          if (!ctx.aborted) { ctx.aborted = true; res.close(); }
          finish();
          return;
        }
        if (ctx.aborted) { finish(); return; }
        const connectFailure = isConnectFailure(err);
        if (connectFailure && body === null) {
          if (current.scheme === 'auto' && scheme === 'https') {
            pools.markAutoHttp(current);
            scheme = 'http';
            attempt();
            return;
          }
          const next = retarget();
          if (next) { current = next; scheme = pools.effectiveScheme(next); attempt(); return; }
        }
        if (!plan.onFailure(err, connectFailure)) plan.sendError(isTimeout(err) ? 504 : 502);
        finish();
      },
    });
  };
  attempt();
}
