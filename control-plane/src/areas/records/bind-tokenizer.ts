// Splits an RFC 1035 §5.1 master file into logical entries: parentheses join lines, ';' starts a comment,
// "..." is one token with \X and \DDD escapes kept for the reader, a line starting with blank keeps the
// previous owner.

export interface Token {
  text: string; // raw text; for quoted tokens the inner text, escapes not yet resolved
  quoted: boolean;
}

export interface Entry {
  line: number; // physical line where the entry starts (1-based)
  blankOwner: boolean; // the entry started with white space: owner is the previous owner
  tokens: Token[];
  comment: string | null; // the last comment on the entry, without ';'
}

export interface LineError {
  line: number;
  error: string;
}

export interface TokenizeResult {
  entries: Entry[];
  errors: LineError[];
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;

/** The characters that end a plain token: blank, newline, ';', '(', ')', '"'. */
function isDelimiter(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === NEWLINE || c === 0x3b || c === 0x28 || c === 0x29 || c === QUOTE;
}

export function tokenize(text: string): TokenizeResult {
  const result: TokenizeResult = { entries: [], errors: [] };
  for (const item of entriesOf(text)) {
    if ('error' in item) result.errors.push(item);
    else result.entries.push(item);
  }
  return result;
}

/**
 * The entries (and syntax errors) of `text` one at a time, in one pass, so a reader can stop early (a file over the
 * record limit is refused without tokenizing the rest of it).
 */
export function* entriesOf(text: string): Generator<Entry | LineError> {
  let line = 1;
  let depth = 0;
  let current: Entry | null = null;
  let atLineStart = true;
  const src = text.replace(/\r\n?/g, '\n');

  const finish = (): Entry | null => {
    const done = current && current.tokens.length ? current : null;
    current = null;
    return done;
  };
  const entry = (blank: boolean): Entry => (current ??= { line, blankOwner: blank, tokens: [], comment: null });

  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === '\n') {
      line++;
      atLineStart = true;
      if (depth === 0) {
        const done = finish();
        if (done) yield done;
      }
      continue;
    }
    if (c === ' ' || c === '\t') {
      if (atLineStart && depth === 0) entry(true);
      atLineStart = false;
      continue;
    }
    atLineStart = false;
    if (c === ';') {
      const end = src.indexOf('\n', i);
      const stop = end === -1 ? src.length : end;
      const open = current as Entry | null; // assigned inside the helpers above, so TS narrows it wrongly
      if (open) open.comment = src.slice(i + 1, stop).trim();
      i = stop - 1;
      continue;
    }
    if (c === '(') {
      entry(false);
      depth++;
      continue;
    }
    if (c === ')') {
      if (depth === 0) yield { line, error: 'unbalanced ")"' };
      else depth--;
      continue;
    }
    if (c === '"') {
      // The token is the text between the quotes as it stands (escapes kept): found, then sliced once.
      const startLine = line;
      let j = i + 1;
      for (; j < src.length && src.charCodeAt(j) !== QUOTE; j++) {
        if (src.charCodeAt(j) === BACKSLASH && j + 1 < src.length) j++;
        if (src.charCodeAt(j) === NEWLINE) line++;
      }
      if (j >= src.length) {
        yield { line: startLine, error: 'unterminated quoted string' };
        return;
      }
      entry(false).tokens.push({ text: src.slice(i + 1, j), quoted: true });
      i = j;
      continue;
    }
    // A plain token runs to a delimiter; a backslash takes the next character along (unless it ends the line).
    let j = i;
    for (; j < src.length && !isDelimiter(src.charCodeAt(j)); j++) {
      if (src.charCodeAt(j) === BACKSLASH && j + 1 < src.length && src.charCodeAt(j + 1) !== NEWLINE) j++;
    }
    entry(false).tokens.push({ text: src.slice(i, j), quoted: false });
    i = j - 1;
  }
  if (depth > 0) yield { line, error: 'unbalanced "(": missing ")" before the end of the file' };
  const last = finish();
  if (last) yield last;
}
