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
      const startLine = line;
      let j = i + 1;
      let s = '';
      for (; j < src.length && src[j] !== '"'; j++) {
        if (src[j] === '\\' && j + 1 < src.length) {
          s += src[j]! + src[j + 1]!;
          j++;
        } else s += src[j]!;
        if (src[j] === '\n') line++;
      }
      if (j >= src.length) {
        yield { line: startLine, error: 'unterminated quoted string' };
        return;
      }
      entry(false).tokens.push({ text: s, quoted: true });
      i = j;
      continue;
    }
    let j = i;
    let s = '';
    for (; j < src.length && !' \t\n;()"'.includes(src[j]!); j++) {
      if (src[j] === '\\' && j + 1 < src.length && src[j + 1] !== '\n') {
        s += src[j]! + src[j + 1]!;
        j++;
      } else s += src[j]!;
    }
    entry(false).tokens.push({ text: s, quoted: false });
    i = j - 1;
  }
  if (depth > 0) yield { line, error: 'unbalanced "(": missing ")" before the end of the file' };
  const last = finish();
  if (last) yield last;
}
