// Captures of the path pattern that matched ($1..$9 in redirect targets and rewrite paths).

function escapeRegex(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

/** Regexes with groups for the include patterns: each `*` of a wildcard is a group; regexes keep their own groups. */
export function captureRegexes(pathMatchType: string, includes: readonly string[]): RegExp[] {
  return includes.map((p) =>
    pathMatchType === 'regex' ? new RegExp(p) : new RegExp(`^${p.split('*').map(escapeRegex).join('(.*)')}$`),
  );
}

/** The groups of the first include pattern that matches `path` ([] when none has groups or none matches). */
export function capturesOf(regexes: readonly RegExp[], path: string): string[] {
  for (const re of regexes) {
    const m = re.exec(path);
    if (m) return m.slice(1).map((g) => g ?? '');
  }
  return [];
}

/** Replaces $1..$9 in `template` with the captures (missing ones become ''). */
export function expandTemplate(template: string, caps: readonly string[]): string {
  if (!template.includes('$')) return template;
  return template.replace(/\$([1-9])/g, (_, d: string) => caps[Number(d) - 1] ?? '');
}
