// optimize: which answers are minified or turned into Markdown, and the transformation of a whole answer held in memory
// (at most TRANSFORM_MAX_BYTES: a larger answer passes through unchanged). HTML and Markdown are our own one-pass code
// (optimize-html.ts), inline for small bodies and on one thread of their own for larger ones (optimize-thread.ts);
// CSS and JavaScript go to esbuild, whose service process keeps the work off the event loop.
import { transform } from 'esbuild';
import { htmlWork } from './optimize-html.js';
import { onHtmlThread, THREAD_MIN_BYTES } from './optimize-thread-client.js';
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

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A UTF-8 body as a string, or undefined when it is not valid UTF-8 (or names another charset). */
function utf8(body: Buffer, charset: string | undefined): string | undefined {
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii') return undefined;
  try {
    return UTF8.decode(body);
  } catch {
    return undefined;
  }
}

/**
 * The transformed body, or undefined to send the original (a charset the transformation cannot read, a script or
 * style sheet esbuild cannot parse, a body that did not get smaller).
 */
export async function transformBody(
  kind: TransformKind,
  body: Buffer,
  charset: string | undefined,
): Promise<Buffer | undefined> {
  if (kind === 'html' || kind === 'markdown') {
    if (body.length < THREAD_MIN_BYTES) return htmlWork(kind, body, charset);
    return onHtmlThread(kind, body, charset);
  }
  const source = utf8(body, charset);
  if (source === undefined) return undefined;
  let out: Buffer;
  try {
    // Whitespace and local names only for scripts: syntax rewrites could bring in syntax newer than the source's.
    const r =
      kind === 'css'
        ? await transform(source, { loader: 'css', minify: true, target: CSS_TARGET, logLevel: 'silent' })
        : await transform(source, {
            loader: 'js',
            minifyWhitespace: true,
            minifyIdentifiers: true,
            logLevel: 'silent',
          });
    out = Buffer.from(r.code, 'utf8');
  } catch {
    return undefined;
  }
  return out.length < body.length ? out : undefined;
}

/** Browsers whose CSS the minifier may write (esbuild then never uses syntax they lack, such as #rrggbbaa). */
const CSS_TARGET = ['chrome61', 'edge18', 'firefox60', 'safari11'];
