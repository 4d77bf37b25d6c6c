// optimize: the transformation of one whole body, the same code inline (small bodies) and on the edge's optimize thread
// (optimize-thread.ts). HTML, Markdown and CSS are our own one-pass code; JavaScript is terser's (loaded on first use).
import { htmlToMarkdown, minifyHtml } from './optimize-html.js';
import { minifyCss } from './optimize-css.js';
import type * as TerserModule from 'terser';

export type WorkKind = 'html' | 'css' | 'js' | 'markdown';

/** Charsets in which ASCII bytes are ASCII characters: HTML and CSS can be minified byte for byte. */
function asciiCompatible(charset: string | undefined): boolean {
  return charset === undefined || !/^(utf-?16|utf-?32|ucs-?2|unicode)/.test(charset);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const META_CHARSET = /<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})/i;

/** The charset a page declares in a `<meta>` within its first 1024 bytes (HTML's prescan), when its header names none. */
function metaCharset(bytes: Buffer): string | undefined {
  return META_CHARSET.exec(bytes.subarray(0, 1024).toString('latin1'))?.[1].toLowerCase();
}

type Terser = typeof TerserModule;
let terser: Promise<Terser> | undefined;

/** Whitespace and local names only: terser's compress step rewrites code, and top-level names are other scripts' globals. */
async function minifyJs(body: Buffer, charset: string | undefined): Promise<Buffer | undefined> {
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii') return undefined;
  let source: string;
  try {
    source = UTF8.decode(body);
  } catch {
    return undefined; // not UTF-8
  }
  const { minify } = await (terser ??= import('terser'));
  // ecma 5 output (terser's default): no syntax newer than the source's is written. A script too deeply nested for
  // the parser ends in a RangeError here (Node's stack is bounded), caught by the caller.
  const r = await minify(source, { compress: false, mangle: true, format: { comments: 'some' } });
  return r.code === undefined ? undefined : Buffer.from(r.code, 'utf8');
}

/**
 * The transformed body, or undefined to send the original (a charset the transformation cannot read, a script that
 * does not parse, a minified body that did not get smaller). Throws only for what the caller treats the same way.
 */
export async function work(kind: WorkKind, body: Uint8Array, charset: string | undefined): Promise<Buffer | undefined> {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let out: Buffer | undefined;
  if (kind === 'js') out = await minifyJs(bytes, charset);
  else if (!asciiCompatible(charset)) return undefined;
  else if (kind === 'html') out = Buffer.from(minifyHtml(bytes.toString('latin1')), 'latin1');
  else if (kind === 'css') out = Buffer.from(minifyCss(bytes.toString('latin1')), 'latin1');
  else {
    let text: string;
    try {
      text = new TextDecoder(charset ?? metaCharset(bytes) ?? 'utf-8').decode(bytes);
    } catch {
      text = new TextDecoder('utf-8').decode(bytes); // an unknown charset label: read as UTF-8
    }
    return Buffer.from(htmlToMarkdown(text), 'utf8');
  }
  return out !== undefined && out.length < bytes.length ? out : undefined;
}
