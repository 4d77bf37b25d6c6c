// The WAF corpora (test/fixtures/waf/*.jsonl) as engine requests, and a runner counting what each paranoia level
// blocks: used by the unit test and by bench/edge-node/waf.bench.ts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { normalisePath } from '@platform/shared/match';
import { compileWaf } from '../rules/waf.js';
import { evaluate, MAX_BODY_BYTES, type WafRequest } from '../waf/engine.js';

export interface CorpusEntry {
  class?: string;
  note?: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export const CORPUS_DIR = fileURLToPath(new URL('../../../test/fixtures/waf/', import.meta.url));

export function loadCorpus(name: 'attacks' | 'benign' | 'holdout-attacks' | 'holdout-benign'): CorpusEntry[] {
  return readFileSync(`${CORPUS_DIR}${name}.jsonl`, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as CorpusEntry);
}

/** The engine's view of a corpus entry, as the edge builds it (raw path, normalised path, query, headers, body). */
export function toWafRequest(e: CorpusEntry): WafRequest {
  const q = e.path.indexOf('?');
  const rawPath = q < 0 ? e.path : e.path.slice(0, q);
  const body = e.body === undefined ? null : Buffer.from(e.body, 'utf8').subarray(0, MAX_BODY_BYTES);
  const headers: [string, string][] = Object.entries(e.headers).map(([k, v]) => [k.toLowerCase(), v]);
  if (body !== null && body.length > 0) headers.push(['content-length', String(body.length)]);
  return {
    method: e.method,
    rawPath,
    path: normalisePath(rawPath),
    query: q < 0 ? '' : e.path.slice(q + 1),
    headers,
    body,
  };
}

export interface CorpusResult {
  total: number;
  blocked: number;
  /** Entries on the wrong side: attacks passed, or benign blocked. */
  wrong: { entry: CorpusEntry; events: string[] }[];
}

/** Runs a corpus through a WAF of paranoia `pl` (threshold 5). */
export function runCorpus(entries: CorpusEntry[], pl: number, attack: boolean): CorpusResult {
  const cfg = compileWaf({ paranoia_level: pl, anomaly_threshold: 5 });
  let blocked = 0;
  const wrong: CorpusResult['wrong'] = [];
  for (const e of entries) {
    const v = evaluate(cfg, toWafRequest(e));
    const block = v.score >= cfg.threshold;
    if (block) blocked++;
    if (block !== attack) wrong.push({ entry: e, events: v.events.map((x) => `${x.rule}@${x.target}:${x.data}`) });
  }
  return { total: entries.length, blocked, wrong };
}
