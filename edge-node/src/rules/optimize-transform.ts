// optimize: which answers are minified or turned into Markdown, and the transformation of a whole answer held in memory
// (at most TRANSFORM_MAX_BYTES: a larger answer passes through unchanged). HTML and Markdown are our own one-pass code
// (optimize-html.ts), and so is CSS (optimize-css.ts): inline for small bodies, on the edge's optimize thread for larger
// ones (optimize-thread-client.ts); JavaScript (terser) always on the thread.
import { onThread, THREAD_MIN_BYTES } from './optimize-thread-client.js';
import { work } from './optimize-work.js';
import type { OptimizeAction } from './optimize.js';

export type TransformKind = 'html' | 'css' | 'js' | 'markdown';

/** Answers up to this size are transformed; a larger one (by Content-Length, or once its chunks pass it) is not. */
export const TRANSFORM_MAX_BYTES = 1024 * 1024;

export const MARKDOWN_TYPE = 'text/markdown; charset=utf-8';

const JS_TYPES = new Set([
  'application/javascript',
  'text/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'text/ecmascript',
]);

/** The media type of a Content-Type value: lower case, no parameters. */
export function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/** The charset parameter of a Content-Type value, lower case, or undefined. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const m = contentType === undefined ? null : /;\s*charset\s*=\s*"?([A-Za-z0-9._:-]{1,40})"?/i.exec(contentType);
  return m ? m[1].toLowerCase() : undefined;
}

/** Whether the client asks for Markdown: `text/markdown` in Accept with a q-value above 0. */
export function wantsMarkdown(accept: string | undefined): boolean {
  if (accept === undefined || accept.length > 8192) return false;
  for (const part of accept.split(',')) {
    const semi = part.indexOf(';');
    if ((semi < 0 ? part : part.slice(0, semi)).trim().toLowerCase() !== 'text/markdown') continue;
    const q = semi < 0 ? null : /;\s*q\s*=\s*([0-9.]+)/i.exec(part.slice(semi));
    if (q === null || Number(q[1]) > 0) return true;
  }
  return false;
}

/**
 * What rule `a` does to an answer of media type `type` (see mediaType) for a client that does or does not want
 * Markdown: Markdown (HTML, markdown_for_agents, the client asks), or minification of HTML, CSS or JavaScript.
 */
export function transformKind(a: OptimizeAction, type: string, markdown: boolean): TransformKind | undefined {
  if (type === 'text/html') {
    if (markdown && a.markdown) return 'markdown';
    return a.minifyHtml ? 'html' : undefined;
  }
  if (type === 'text/css') return a.minifyCss ? 'css' : undefined;
  if (JS_TYPES.has(type)) return a.minifyJs ? 'js' : undefined;
  return undefined;
}

/**
 * The transformed body, or undefined to send the original (a charset the transformation cannot read, a script terser
 * cannot parse, a body that did not get smaller, a full or stuck thread).
 */
export async function transformBody(
  kind: TransformKind,
  body: Buffer,
  charset: string | undefined,
): Promise<Buffer | undefined> {
  if (kind !== 'js' && body.length < THREAD_MIN_BYTES) {
    try {
      return await work(kind, body, charset);
    } catch {
      return undefined;
    }
  }
  return onThread(kind, body, charset);
}
