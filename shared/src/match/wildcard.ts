// Wildcard patterns (`*` = a run of characters) matched with startsWith/endsWith/lastIndexOf, never through a regex:
// no backtracking, at worst O(pattern length × input length).

/**
 * One wildcard pattern over a whole string. `minRun` is the fewest characters a `*` stands for: 0 for paths, 1 for
 * host names (`api-*.x` needs something after `api-`). Captures are what each `*` stood for, chosen as a greedy regex
 * would (the leftmost `*` takes the longest run that lets the rest match), so `$1..$9` keep their meaning.
 */
export class WildcardPattern {
  /** The literal text between the stars: `parts.length` is the number of stars plus one. */
  private readonly parts: string[];
  private readonly minLength: number;
  /** The first path segment of every path this pattern matches, when its literal start holds one (`/img/*.png`). */
  readonly leadingSegment: string | null;

  constructor(
    readonly source: string,
    private readonly minRun: 0 | 1 = 0,
  ) {
    this.parts = source.split('*');
    const stars = this.parts.length - 1;
    this.minLength = source.length - stars + stars * minRun;
    const end = this.parts[0].indexOf('/', 1);
    this.leadingSegment = this.parts[0].startsWith('/') && end > 0 ? this.parts[0].slice(0, end) : null;
  }

  test(text: string): boolean {
    return this.place(text, null);
  }

  /** What each `*` stood for, or null when `text` does not match. */
  captures(text: string): string[] | null {
    const caps: string[] = new Array<string>(this.parts.length - 1);
    return this.place(text, caps) ? caps : null;
  }

  /**
   * Places the literal parts from the right, each as far right as it fits: the rightmost placement leaves the most
   * room to the parts on its left, so if it fails nothing fits, and it is the placement a greedy regex settles on.
   */
  private place(text: string, caps: string[] | null): boolean {
    const parts = this.parts;
    const k = parts.length - 1;
    if (k === 0) return text === parts[0];
    if (text.length < this.minLength) return false;
    const first = parts[0];
    const last = parts[k];
    if (!text.startsWith(first) || !text.endsWith(last)) return false;
    const min = this.minRun;
    const lowest = first.length + min;
    let end = text.length - last.length; // where the run of star i ends
    for (let i = k - 1; i >= 1; i--) {
      const part = parts[i];
      const from = end - min - part.length;
      if (from < lowest) return false;
      const at = text.lastIndexOf(part, from);
      if (at < lowest) return false;
      if (caps !== null) caps[i] = text.slice(at + part.length, end);
      end = at;
    }
    if (end < lowest) return false;
    if (caps !== null) caps[0] = text.slice(first.length, end);
    return true;
  }
}
