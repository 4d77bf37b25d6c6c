// The waf phase (after the challenge, before basic_auth): every matching waf rule evaluates the request under its own
// configuration. Phase 1 (request line, headers, cookies, query) runs synchronously; when a rule inspects bodies and
// the request carries a form, JSON, multipart or XML body, its first MAX_BODY_BYTES are read, phase 2 runs, and the
// origin is sent that prefix followed by the rest of the stream (nothing beyond the prefix is held). An enforced rule
// whose score reaches its threshold answers 403; a dry-run rule logs its findings with action `log` and passes.
import { Readable } from 'node:stream';
import type { HttpResponse } from 'uWebSockets.js';
import type { RequestContext, WafEvent } from '../context.js';
import type { CompiledRule, RuleIndex } from '../rules/compile.js';
import type { HeaderOp } from '../rules/header.js';
import type { WafAction } from '../rules/waf.js';
import { respond } from '../proxy/respond.js';
import { pageAnswer } from '../custom-pages.js';
import { evaluateBody, evaluateHead, inspectsBody, MAX_BODY_BYTES, type Evaluation } from './engine.js';

const BLOCKED: [string, string][] = [
  ['content-type', 'text/plain; charset=utf-8'],
  ['cache-control', 'no-store'],
  ['x-edge-error', 'EDGE_ERR_WAF_BLOCKED'],
];

/** Matching waf rules of the request being evaluated (reused: collection is synchronous). */
const scratch: CompiledRule<WafAction>[] = [];

/** Records a rule's findings on the request and its hit; true when it blocks. */
function settle(ctx: RequestContext, r: CompiledRule<WafAction>, ev: Evaluation): boolean {
  const block = !r.dryRun && ev.score >= r.action.threshold;
  if (ev.events.length === 0) return false;
  const over = ev.score >= r.action.threshold;
  ctx.waf ??= [];
  for (const e of ev.events) {
    const w: WafEvent = {
      ruleId: r.id,
      wafRule: e.rule,
      phase: e.phase,
      target: e.target,
      data: e.data,
      action: block ? 'block' : 'log',
    };
    ctx.waf.push(w);
  }
  if (over) ctx.hit(r.id, r.type, r.dryRun);
  return block;
}

function answer(res: HttpResponse, ctx: RequestContext, responseOps: HeaderOp[]): void {
  const reason = 'request blocked by the web application firewall';
  const page = pageAnswer(ctx.customPages, 'waf_block', 403, reason, BLOCKED[2]);
  respond(res, ctx, 403, page?.headers ?? [...BLOCKED], page?.body ?? `${reason}\n`, responseOps);
}

export type WafOutcome =
  | { answered: true }
  | { answered: false; body: Readable | null }
  | Promise<{ answered: true } | { answered: false; body: Readable | null }>;

const PASS_SAME = (body: Readable | null) => ({ answered: false as const, body });

/**
 * Runs the waf rules matching `ctx`. Answers 403 itself when an enforced rule blocks (the caller logs the request);
 * otherwise gives the body to send on (the same stream, or the inspected prefix followed by the rest).
 */
export function wafPhase(
  res: HttpResponse,
  ctx: RequestContext,
  index: RuleIndex<WafAction>,
  body: Readable | null,
  responseOps: HeaderOp[],
): WafOutcome {
  index.all(ctx, scratch, false);
  if (scratch.length === 0) return PASS_SAME(body);
  const rules = scratch.slice();
  scratch.length = 0;
  const req = {
    method: ctx.method,
    rawPath: ctx.rawPath,
    path: ctx.path,
    query: ctx.query,
    headers: ctx.headers,
    body: null,
  };
  const evals: Evaluation[] = [];
  let wantBody = false;
  for (const r of rules) {
    const ev = evaluateHead(r.action, req);
    // An enforced rule already over its threshold blocks without the body being read.
    if (!r.dryRun && ev.score >= r.action.threshold) {
      settle(ctx, r, ev);
      answer(res, ctx, responseOps);
      return { answered: true };
    }
    evals.push(ev);
    if (r.action.inspectBody) wantBody = true;
  }
  const finish = (prefix: Buffer | null): boolean => {
    let blocked = false;
    for (let i = 0; i < rules.length; i++) {
      if (prefix !== null && rules[i].action.inspectBody) evaluateBody(evals[i], prefix);
      if (settle(ctx, rules[i], evals[i]) && !blocked) blocked = true;
    }
    return blocked;
  };
  if (!wantBody || body === null || !inspectsBody(ctx.header('content-type'))) {
    if (finish(null)) {
      answer(res, ctx, responseOps);
      return { answered: true };
    }
    return PASS_SAME(body);
  }
  return readPrefix(body, MAX_BODY_BYTES).then(
    ({ prefix, rest }) => {
      if (finish(prefix)) {
        rest.destroy();
        answer(res, ctx, responseOps);
        return { answered: true as const };
      }
      return { answered: false as const, body: rest };
    },
    (err: unknown) => {
      // The client went away while its body was read: nothing to answer; the request is logged (499).
      if (ctx.aborted) return { answered: true as const };
      throw err;
    },
  );
}

/**
 * Reads up to `max` bytes of `body`; returns them and a stream that replays them and then the rest of `body`
 * (unread beyond the prefix until the origin asks: backpressure is kept).
 */
async function readPrefix(body: Readable, max: number): Promise<{ prefix: Buffer; rest: Readable }> {
  const it = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let n = 0;
  let done = false;
  while (n < max) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    chunks.push(r.value);
    n += r.value.length;
  }
  const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  const prefix = all.length > max ? all.subarray(0, max) : all;
  async function* replay(): AsyncGenerator<Buffer> {
    if (all.length > 0) yield all;
    if (done) return;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  }
  return { prefix, rest: Readable.from(replay(), { objectMode: false }) };
}
