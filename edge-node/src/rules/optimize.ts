// optimize: negotiated brotli/gzip compression of uncompressed origin answers; minification and Markdown for agents
// are in optimize-transform.ts (image_format is stored by the API and not acted on yet). The decisions are taken from
// the origin's head; the streaming is in proxy/forward.ts.
import { constants, createBrotliCompress, createGzip, type BrotliCompress, type Gzip } from 'node:zlib';
import type { RuleBody } from '@platform/shared/match';
import type { EncodingClass } from '../cache/key.js';

export type Coding = 'br' | 'gzip';

export interface OptimizeAction {
  br: boolean;
  gzip: boolean;
  /** Exact media types (lower case, no parameters); with `prefixes`, empty means the built-in list. */
  types: ReadonlySet<string>;
  /** `text/` for `text/*`. */
  prefixes: readonly string[];
  minSize: number;
  minifyHtml: boolean;
  minifyCss: boolean;
  minifyJs: boolean;
  /** HTML answers become Markdown for a client that asks for text/markdown. */
  markdown: boolean;
}

/** Compressed when the rule names no content_types: text formats that gain from it (images, video, fonts' woff2 do not). */
const DEFAULT_TYPES: ReadonlySet<string> = new Set([
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/json',
  'application/ld+json',
  'application/manifest+json',
  'application/problem+json',
  'application/geo+json',
  'application/xml',
  'application/xhtml+xml',
  'application/rss+xml',
  'application/atom+xml',
  'application/wasm',
  'application/x-font-ttf',
  'application/vnd.ms-fontobject',
  'font/ttf',
  'font/otf',
  'image/svg+xml',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  'image/bmp',
]);
const DEFAULT_PREFIXES: readonly string[] = ['text/'];

export function compileOptimize(f: RuleBody): OptimizeAction {
  const codings = (f.compression as string[] | undefined) ?? ['br', 'gzip'];
  const listed = (f.content_types as string[] | undefined) ?? [];
  const types = new Set<string>();
  const prefixes: string[] = [];
  for (const t of listed) {
    if (t.endsWith('/*')) prefixes.push(t.slice(0, -1));
    else types.add(t);
  }
  const own = listed.length > 0;
  return {
    br: codings.includes('br'),
    gzip: codings.includes('gzip'),
    types: own ? types : DEFAULT_TYPES,
    prefixes: own ? prefixes : DEFAULT_PREFIXES,
    minSize: Number(f.min_size ?? 1024),
    minifyHtml: f.minify_html === true,
    minifyCss: f.minify_css === true,
    minifyJs: f.minify_js === true,
    markdown: f.markdown_for_agents === true,
  };
}

/**
 * The answer's Content-Type and the index of its ETag (-1: none), or undefined when the edge must leave its body as it
 * is: already encoded, a range (Content-Range), or `Cache-Control: no-transform`.
 */
export function changeableHead(headers: [string, string][]): { type: string | undefined; etag: number } | undefined {
  let type: string | undefined;
  let etag = -1;
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i];
    if (name === 'content-encoding') {
      const v = value.trim().toLowerCase();
      if (v !== '' && v !== 'identity') return undefined;
    } else if (name === 'content-range') return undefined;
    else if (name === 'cache-control') {
      if (value.toLowerCase().includes('no-transform')) return undefined;
    } else if (name === 'content-type') type = value;
    else if (name === 'etag') etag = i;
  }
  return { type, etag };
}

/** Whether the rule minifies or converts anything. */
export function transforms(a: OptimizeAction): boolean {
  return a.minifyHtml || a.minifyCss || a.minifyJs || a.markdown;
}

/** Whether the Content-Type value (parameters allowed) is one the rule compresses. */
export function compressibleType(a: OptimizeAction, contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semi = contentType.indexOf(';');
  const t = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (a.types.has(t)) return true;
  for (const p of a.prefixes) if (t.startsWith(p) && t.length > p.length) return true;
  return false;
}

/**
 * The coding for a client of Accept-Encoding class `cls` (src/cache/key.ts: `br` when br and gzip are both
 * acceptable, `gzip` when gzip is; q=0 refuses a coding), or undefined. Brotli is preferred when both are allowed.
 */
export function chooseCoding(a: OptimizeAction, cls: EncodingClass): Coding | undefined {
  if (cls === 'br') return a.br ? 'br' : a.gzip ? 'gzip' : undefined;
  if (cls === 'gzip') return a.gzip ? 'gzip' : undefined;
  return undefined;
}

/** Brotli quality and gzip level: fast settings for on-the-fly compression (measured in bench/edge-node). */
export const BROTLI_QUALITY = 4;
export const GZIP_LEVEL = 6;

/** A streaming compressor with bounded buffers (16 KiB chunks). */
export function createCompressor(coding: Coding, sizeHint: number): BrotliCompress | Gzip {
  if (coding === 'gzip') return createGzip({ level: GZIP_LEVEL, chunkSize: 16 * 1024 });
  const params: Record<number, number> = {
    [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    // A 4 MiB window at most: brotli's memory per stream stays bounded whatever the answer's size.
    [constants.BROTLI_PARAM_LGWIN]: 22,
  };
  if (sizeHint > 0) params[constants.BROTLI_PARAM_SIZE_HINT] = sizeHint;
  return createBrotliCompress({ params, chunkSize: 16 * 1024 });
}
