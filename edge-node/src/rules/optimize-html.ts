// optimize: our own HTML lexer, and on it the HTML minifier and the HTML-to-Markdown converter (Markdown for agents).
// Hand-written rather than a library: the libraries measured crashed the process on deep nesting or took seconds on
// 1 MiB (docs/decisions.md, bench/edge-node/optimize-html.bench.ts). One pass, no recursion, a bounded element stack:
// time is linear in the input and memory a small multiple of it, whatever the nesting or line length.
import { decodeHTML } from 'entities';

/** Elements whose content is raw text up to their end tag (HTML's raw text and RCDATA states, plus noscript). */
const RAW = new Set([
  'script',
  'style',
  'textarea',
  'title',
  'xmp',
  'iframe',
  'noembed',
  'noframes',
  'noscript',
  'plaintext',
]);

/** Where the raw text of element `name` starting at `from` ends: at its `</name` (any case), or the input's end. */
function rawEnd(s: string, from: number, name: string): number {
  let i = from;
  for (;;) {
    const k = s.indexOf('</', i);
    const e = k + 2 + name.length;
    if (k < 0 || e >= s.length) return s.length;
    const c = s.charCodeAt(e);
    if ((isSpace(c) || c === 0x2f || c === 0x3e) && s.slice(k + 2, e).toLowerCase() === name) return k;
    i = k + 2;
  }
}

interface Sink {
  /** Text between tags, [start, end) of the source. */
  text(start: number, end: number): void;
  /** `<!--…-->` including its delimiters. */
  comment(start: number, end: number): void;
  /** A start tag [start, end) named `name` (lower case); `raw` is the extent of its raw text content, when it has one. */
  open(name: string, start: number, end: number): void;
  /** Raw text content of a script, style, textarea, … element. */
  raw(name: string, start: number, end: number): void;
  close(name: string, start: number, end: number): void;
  /** A doctype, processing instruction, CDATA section or bogus markup: copied or ignored, never changed. */
  other(start: number, end: number): void;
}

function isAlpha(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
}
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0c || c === 0x0d;
}

/** The end of the start tag whose name ends at `i` (just past its `>`), or -1 when the input ends first. */
function tagEnd(s: string, i: number): number {
  const n = s.length;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === 0x3e) return i + 1;
    if (c === 0x22 || c === 0x27) {
      // A quoted value (only after `=`, but a stray quote in a name is rare and this is still linear).
      const q = s.indexOf(c === 0x22 ? '"' : "'", i + 1);
      if (q < 0) return -1;
      i = q + 1;
    } else i++;
  }
  return -1;
}

/** Tokenises HTML in one pass (each character looked at a bounded number of times). */
function lex(s: string, sink: Sink): void {
  const n = s.length;
  let i = 0;
  let textStart = 0;
  const flush = (end: number) => {
    if (end > textStart) sink.text(textStart, end);
  };
  while (i < n) {
    const lt = s.indexOf('<', i);
    if (lt < 0 || lt + 1 >= n) break;
    const c = s.charCodeAt(lt + 1);
    if (isAlpha(c)) {
      let j = lt + 2;
      while (j < n) {
        const d = s.charCodeAt(j);
        if (isSpace(d) || d === 0x2f || d === 0x3e) break;
        j++;
      }
      const end = tagEnd(s, j);
      if (end < 0) break; // an unterminated tag: the rest is text, as it is
      flush(lt);
      const name = s.slice(lt + 1, j).toLowerCase();
      sink.open(name, lt, end);
      i = textStart = end;
      // A raw text element's content runs to its end tag even after `<script … />` (HTML ignores the slash there).
      if (RAW.has(name)) {
        if (name === 'plaintext') {
          sink.raw(name, end, n);
          return;
        }
        const rawStop = rawEnd(s, end, name);
        sink.raw(name, end, rawStop);
        i = textStart = rawStop;
      }
      continue;
    }
    if (c === 0x2f) {
      // `</name …>`; `</>` and `</` followed by anything else are bogus markup, kept as they are.
      const gt = s.indexOf('>', lt + 2);
      if (gt < 0) break;
      flush(lt);
      if (isAlpha(s.charCodeAt(lt + 2))) {
        let j = lt + 3;
        while (j < gt) {
          const d = s.charCodeAt(j);
          if (isSpace(d) || d === 0x2f) break;
          j++;
        }
        sink.close(s.slice(lt + 2, j).toLowerCase(), lt, gt + 1);
      } else sink.other(lt, gt + 1);
      i = textStart = gt + 1;
      continue;
    }
    if (c === 0x21) {
      if (s.startsWith('<!--', lt)) {
        // `<!-->` and `<!--->` are whole (empty) comments.
        let end: number;
        if (s.startsWith('>', lt + 4)) end = lt + 5;
        else if (s.startsWith('->', lt + 4)) end = lt + 6;
        else {
          const close = s.indexOf('-->', lt + 4);
          end = close < 0 ? n : close + 3;
        }
        flush(lt);
        sink.comment(lt, end);
        i = textStart = end;
        continue;
      }
      const cdata = s.startsWith('<![CDATA[', lt);
      const close = cdata ? s.indexOf(']]>', lt + 9) : s.indexOf('>', lt + 2);
      const end = close < 0 ? n : close + (cdata ? 3 : 1);
      flush(lt);
      sink.other(lt, end);
      i = textStart = end;
      continue;
    }
    if (c === 0x3f) {
      const gt = s.indexOf('>', lt + 2);
      const end = gt < 0 ? n : gt + 1;
      flush(lt);
      sink.other(lt, end);
      i = textStart = end;
      continue;
    }
    i = lt + 1; // a `<` that starts no markup is text
  }
  flush(n);
}

// ---------------------------------------------------------------------------------------------------------------
// Minifier

/**
 * Tags between which a run of white space is never rendered: the document's structure and the head's elements.
 * Whitespace next to any other element may be rendered (inline and inline-block boxes), so it is collapsed, not removed.
 */
const STRUCTURAL = new Set(['html', 'head', 'body', 'meta', 'link', 'title', 'base', 'script', 'style', '!']);
/** Elements whose text keeps its white space as it is. */
const PRE = new Set(['pre', 'listing']);
const SPACES = /[\t\n\f\r ]+/g;
const ALL_SPACE = /^[\t\n\f\r ]*$/;
/** Text with something to collapse: a run of two or more, or a tab, form feed or carriage return. */
const COLLAPSIBLE = /[\t\n\f\r ]{2}|[\t\f\r]/;

function collapse(run: string): string {
  return run.includes('\n') || run.includes('\r') ? '\n' : ' ';
}

/**
 * Minifies HTML given as a latin1 string (one character per byte, so any ASCII-compatible charset comes out byte for
 * byte): comments dropped (conditional comments and `<!--!` kept), runs of white space in text collapsed to one
 * space (a line break when the run had one, so scripts' automatic semicolons are safe), white space between two
 * structural tags dropped. Tags, attributes and the content of pre, textarea, script, style and the other raw text
 * elements are copied as they are.
 */
export function minifyHtml(s: string): string {
  // Tokens kept as they are cost nothing: the source is copied in runs between the places that change.
  const out: string[] = [];
  let copied = 0;
  const replace = (start: number, end: number, by: string) => {
    if (start > copied) out.push(s.slice(copied, start));
    if (by !== '') out.push(by);
    copied = end;
  };
  let preDepth = 0;
  /** Whitespace-only text waiting for the next token: it goes when both its neighbours are structural. */
  let pendingStart = -1;
  let pendingEnd = -1;
  let prevStructural = true;
  const settle = (nextStructural: boolean) => {
    if (pendingStart < 0) return;
    if (prevStructural && nextStructural) replace(pendingStart, pendingEnd, '');
    else if (pendingEnd - pendingStart > 1 || s.charCodeAt(pendingStart) !== 0x20)
      replace(pendingStart, pendingEnd, collapse(s.slice(pendingStart, pendingEnd)));
    pendingStart = -1;
  };
  /** White space was kept just before a dropped comment. */
  let spaceBeforeComment = false;
  const kept = (structural: boolean) => {
    spaceBeforeComment = false;
    settle(structural);
    prevStructural = structural;
  };
  lex(s, {
    text(start, end) {
      if (preDepth > 0) return kept(false);
      const t = s.slice(start, end);
      if (ALL_SPACE.test(t)) {
        if (spaceBeforeComment) return replace(start, end, ''); // one space already stands for both runs
        pendingStart = start;
        pendingEnd = end;
        return;
      }
      kept(false);
      if (COLLAPSIBLE.test(t)) replace(start, end, t.replace(SPACES, collapse));
    },
    comment(start, end) {
      const c = s.charCodeAt(start + 4);
      // `[if …]>` / `<![endif]` conditional comments and `<!--!` (kept by convention) stay.
      if (c === 0x5b || c === 0x21 || s.startsWith('<!--<!', start)) return kept(false);
      // A dropped comment is transparent: white space before it stays (collapsed), the structure around it counts.
      const before = prevStructural;
      const spaced = pendingStart >= 0;
      settle(false);
      prevStructural = before;
      replace(start, end, '');
      spaceBeforeComment = spaced;
    },
    open(name) {
      if (PRE.has(name)) preDepth++;
      kept(STRUCTURAL.has(name));
    },
    raw() {
      kept(false);
    },
    close(name) {
      if (PRE.has(name) && preDepth > 0) preDepth--;
      kept(STRUCTURAL.has(name));
    },
    other(start) {
      kept(s.charCodeAt(start + 1) === 0x21);
    },
  });
  settle(true); // white space at the end of the document is not rendered
  if (copied < s.length) out.push(s.slice(copied));
  return out.join('');
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown

/** Elements whose content is not part of the document's text. */
const SKIP = new Set([
  'head',
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'iframe',
  'object',
  'canvas',
  'select',
  'title',
  'textarea',
  'xmp',
  'noembed',
  'noframes',
  'plaintext',
]);
const BLOCK = new Set([
  'p',
  'div',
  'section',
  'article',
  'header',
  'footer',
  'nav',
  'main',
  'aside',
  'figure',
  'figcaption',
  'address',
  'details',
  'summary',
  'dl',
  'form',
  'fieldset',
  'table',
  'center',
  'body',
]);
const VOID = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
/** Elements tracked on the stack at most this deep; deeper ones are read as text (a bound on work and memory). */
const MAX_DEPTH = 256;
/** Only this many nested lists and quotes indent their lines (so a line's prefix stays short). */
const MAX_INDENT = 8;

/** The decoded value of attribute `want` of the start tag [start, end), or undefined. */
function attr(s: string, start: number, end: number, want: string): string | undefined {
  let i = start + 1;
  while (i < end && !isSpace(s.charCodeAt(i)) && s.charCodeAt(i) !== 0x2f && s.charCodeAt(i) !== 0x3e) i++;
  while (i < end) {
    while (i < end && (isSpace(s.charCodeAt(i)) || s.charCodeAt(i) === 0x2f)) i++;
    if (i >= end || s.charCodeAt(i) === 0x3e) return undefined;
    const nameStart = i;
    while (i < end) {
      const c = s.charCodeAt(i);
      if (isSpace(c) || c === 0x2f || c === 0x3e || c === 0x3d) break;
      i++;
    }
    const name = s.slice(nameStart, i).toLowerCase();
    while (i < end && isSpace(s.charCodeAt(i))) i++;
    let value = '';
    if (s.charCodeAt(i) === 0x3d) {
      i++;
      while (i < end && isSpace(s.charCodeAt(i))) i++;
      const q = s.charCodeAt(i);
      if (q === 0x22 || q === 0x27) {
        const close = s.indexOf(q === 0x22 ? '"' : "'", i + 1);
        const stop = close < 0 || close > end ? end : close;
        value = s.slice(i + 1, stop);
        i = stop + 1;
      } else {
        const vs = i;
        while (i < end && !isSpace(s.charCodeAt(i)) && s.charCodeAt(i) !== 0x3e) i++;
        value = s.slice(vs, i);
      }
    }
    if (name === want) return decodeHTML(value);
  }
  return undefined;
}

/** A link or image target as Markdown takes it: spaces and parentheses escaped; script URLs dropped. */
function target(url: string): string | undefined {
  const u = url.trim();
  if (u === '' || /^\s*(javascript|vbscript|data):/i.test(u)) return undefined;
  return u.replace(/[\s()<>]/g, (c) => encodeURIComponent(c));
}

interface Frame {
  name: string;
  /** What closing it writes (`](url)` for a link), and whether it was a skipped element or an indenting container. */
  suffix: string;
  skip: boolean;
  indent: boolean;
  list?: { ordered: boolean; n: number };
}

/**
 * HTML (a decoded string) to Markdown: headings, paragraphs, emphasis, code and preformatted blocks, links, images,
 * lists, quotes and tables; scripts, styles, the head and embedded objects dropped. Text is not escaped.
 */
export function htmlToMarkdown(s: string): string {
  const out: string[] = [];
  let newlines = 2; // newlines at the end of out (2: a block starts here; the document's start counts as one)
  let lineStart = true;
  let space = true; // the last character written was white space
  let skip = 0;
  let pre = 0;
  const stack: Frame[] = [];
  const open = new Map<string, number>();
  const prefixes: string[] = [];
  const lists: NonNullable<Frame['list']>[] = [];
  let tableRow = 0;
  let rowCells = 0;

  const prefix = () => prefixes.join('');
  const write = (t: string) => {
    if (t === '') return;
    if (lineStart) {
      out.push(prefix());
      lineStart = false;
    }
    out.push(t);
    newlines = 0;
    space = t.charCodeAt(t.length - 1) === 0x20;
  };
  const newline = () => {
    if (newlines === 0) {
      out.push('\n');
      newlines = 1;
      lineStart = true;
      space = true;
    }
  };
  const block = () => {
    while (newlines < 2) {
      const p = prefix().trimEnd();
      out.push(newlines === 0 ? '\n' : `${p}\n`);
      newlines++;
    }
    lineStart = true;
    space = true;
  };
  const text = (t: string) => {
    if (skip > 0) return;
    if (pre > 0) {
      const lines = decodeHTML(t).split(/\r\n|\r|\n/);
      lines.forEach((line, k) => {
        if (k > 0) {
          out.push('\n');
          newlines = 1;
          lineStart = true;
        }
        write(line);
      });
      return;
    }
    let d = decodeHTML(t).replace(/[\t\n\f\r ]+/g, ' ');
    if (space && d.charCodeAt(0) === 0x20) d = d.slice(1);
    write(d);
  };
  const push = (f: Frame) => {
    if (f.skip) skip++;
    if (f.indent) prefixes.push(prefixes.length < MAX_INDENT ? (f.name === 'blockquote' ? '> ' : '   ') : '');
    if (f.list) lists.push(f.list);
    stack.push(f);
    open.set(f.name, (open.get(f.name) ?? 0) + 1);
  };
  const pop = (): Frame => {
    const f = stack.pop()!;
    open.set(f.name, open.get(f.name)! - 1);
    if (f.skip) skip--;
    if (f.indent) prefixes.pop();
    if (f.list) lists.pop();
    return f;
  };
  const closeFrame = (f: Frame) => {
    if (skip > 0) return;
    const name = f.name;
    if (f.suffix !== '') write(f.suffix);
    if (name === 'pre') {
      pre--;
      newline();
      write('```');
      block();
    } else if (name === 'li' || name === 'dt' || name === 'dd' || name === 'tr') {
      if (name === 'tr') {
        tableRow++;
        if (tableRow === 1 && rowCells > 0) {
          newline();
          write(`|${' --- |'.repeat(rowCells)}`);
        }
      }
      newline();
    } else if (name === 'td' || name === 'th') {
      write(' |');
      rowCells++;
    } else if (name === 'blockquote') {
      block();
      out.push('\n'); // the quote's last line was `>`: a blank line ends it
    } else if (BLOCK.has(name) || /^h[1-6]$/.test(name) || name === 'ul' || name === 'ol') block();
  };

  lex(s, {
    text(start, end) {
      text(s.slice(start, end));
    },
    comment() {},
    other() {},
    raw() {}, // every raw text element's content is skipped (scripts, styles, form fields, titles)
    open(name, start, end) {
      if (VOID.has(name)) {
        if (skip > 0) return;
        if (name === 'br') {
          if (pre > 0) out.push('\n');
          else newline();
        } else if (name === 'hr') {
          block();
          write('---');
          block();
        } else if (name === 'img') {
          const src = target(attr(s, start, end, 'src') ?? '');
          if (src !== undefined) write(`![${(attr(s, start, end, 'alt') ?? '').replace(/[\s\]]+/g, ' ')}](${src})`);
        }
        return;
      }
      if (s.charCodeAt(end - 2) === 0x2f && !RAW.has(name)) return; // `<x/>`: nothing inside
      if (stack.length >= MAX_DEPTH) return;
      // Elements that close an open one of their kind (`<li>` after `<li>`, `<p>` after `<p>`): HTML's implied ends.
      if ((name === 'li' || name === 'p' || name === 'tr' || name === 'td' || name === 'th') && open.get(name)) {
        const top = stack[stack.length - 1];
        if (top !== undefined && (top.name === name || (name === 'td' && top.name === 'th'))) closeFrame(pop());
      }
      const f: Frame = { name, suffix: '', skip: SKIP.has(name), indent: false };
      if (skip === 0 && !f.skip) {
        const h = /^h([1-6])$/.exec(name);
        if (h) {
          block();
          write(`${'#'.repeat(Number(h[1]))} `);
        } else if (name === 'ul' || name === 'ol') {
          if (lists.length === 0) block();
          else newline();
          const st = Number(attr(s, start, end, 'start'));
          f.list = { ordered: name === 'ol', n: Number.isInteger(st) && st >= 0 && st < 1e9 ? st : 1 };
        } else if (name === 'li') {
          newline();
          const l = lists[lists.length - 1];
          write(l?.ordered ? `${l.n++}. ` : '- ');
          space = true;
          f.indent = true;
        } else if (name === 'blockquote') {
          block();
          f.indent = true;
        } else if (name === 'pre') {
          block();
          write('```');
          newline();
          pre++;
        } else if (name === 'tr') {
          newline();
          rowCells = 0;
          write('|');
          space = false;
        } else if (name === 'td' || name === 'th') write(' ');
        else if (name === 'table') {
          block();
          tableRow = 0;
        } else if (name === 'dt' || name === 'dd') newline();
        else if (BLOCK.has(name)) block();
        else if (name === 'strong' || name === 'b') {
          write('**');
          f.suffix = '**';
        } else if (name === 'em' || name === 'i') {
          write('_');
          f.suffix = '_';
        } else if (name === 'code' && pre === 0) {
          write('`');
          f.suffix = '`';
        } else if (name === 'a') {
          const href = target(attr(s, start, end, 'href') ?? '');
          if (href !== undefined) {
            write('[');
            f.suffix = `](${href})`;
          }
        }
      }
      push(f); // a raw text element's content and end tag follow from the lexer
    },
    close(name) {
      if (!open.get(name)) return; // an end tag with no open element: ignored (constant time)
      while (stack.length > 0) {
        const f = pop();
        closeFrame(f);
        if (f.name === name) break;
      }
    },
  });
  while (stack.length > 0) closeFrame(pop());
  let md = out.join('');
  md = md.replace(/^\n+/, '').replace(/\s+$/, '');
  return md === '' ? '' : `${md}\n`;
}
