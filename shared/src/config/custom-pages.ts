// Custom pages: a domain's own HTML for the answers the edge makes itself (origin failures, security blocks, rate
// limits, the challenge), modelled on Cloudflare's custom error pages. The control plane validates them with these
// rules (PUT /domains/{domain}/custom-pages) and the edge fills the placeholders; both read this one table.

/** Largest page, in UTF-8 bytes. Pages travel in every config entry of the domain, so they stay small. */
export const CUSTOM_PAGE_MAX_BYTES = 32 * 1024;

/** Replaced by the edge with what the answer is about (status and reason, escaped); optional, at most once. */
export const ERROR_PLACEHOLDER = '::ERROR_BOX::';
/** Replaced by the edge with the challenge's form and script; required exactly once in a challenge page. */
export const CHALLENGE_PLACEHOLDER = '::CHALLENGE_BOX::';

export interface CustomPageKind {
  /** When the edge uses the page. */
  description: string;
  /** The placeholder the page may hold (at most once). */
  placeholder: string;
  /** True when the page must hold its placeholder (the edge cannot do its work without it). */
  required: boolean;
}

export const CUSTOM_PAGE_KINDS = {
  '500_errors': {
    description:
      'origin failures the edge answers itself: 502 (unreachable, refused address), 504 (timeout), 526 (origin ' +
      'certificate); an error_page rule covering the status wins',
    placeholder: ERROR_PLACEHOLDER,
    required: false,
  },
  waf_block: {
    description:
      '403 of a security block: waf, a custom rule with action block, fingerprint and bot_route blocks ' +
      '(a drop rule keeps its own body)',
    placeholder: ERROR_PLACEHOLDER,
    required: false,
  },
  ratelimit_block: {
    description: '429 of a rate_limit rule over its limit',
    placeholder: ERROR_PLACEHOLDER,
    required: false,
  },
  managed_challenge: {
    description: 'the challenge page (Under Attack Mode, captcha records and rules, challenge actions)',
    placeholder: CHALLENGE_PLACEHOLDER,
    required: true,
  },
} as const satisfies Record<string, CustomPageKind>;

export type CustomPageKindName = keyof typeof CUSTOM_PAGE_KINDS;

export function isCustomPageKind(kind: string): kind is CustomPageKindName {
  return Object.hasOwn(CUSTOM_PAGE_KINDS, kind);
}

/** Occurrences of `needle` in `s`, counting at most 2 (linear). */
function occurrences(s: string, needle: string): number {
  const first = s.indexOf(needle);
  if (first < 0) return 0;
  return s.indexOf(needle, first + needle.length) < 0 ? 1 : 2;
}

/**
 * Why `html` cannot be the domain's page of `kind`, or undefined when it can: at most CUSTOM_PAGE_MAX_BYTES, no NUL
 * or other C0 control character besides tab, line feed and carriage return, the kind's placeholder at most once
 * (exactly once when required), and no other kind's placeholder.
 */
export function customPageProblem(kind: CustomPageKindName, html: string): string | undefined {
  // Length first (a UTF-16 unit is at most 3 UTF-8 bytes), so nothing below scans a huge string.
  if (html.length > CUSTOM_PAGE_MAX_BYTES || Buffer.byteLength(html) > CUSTOM_PAGE_MAX_BYTES)
    return `must be at most ${CUSTOM_PAGE_MAX_BYTES} bytes`;
  if (html.trim() === '') return 'must not be empty (null restores the default page)';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(html)) return 'must not hold control characters';
  const spec = CUSTOM_PAGE_KINDS[kind];
  const n = occurrences(html, spec.placeholder);
  if (n > 1) return `must hold ${spec.placeholder} at most once`;
  if (spec.required && n === 0) return `must hold ${spec.placeholder} (where the edge puts the challenge)`;
  for (const other of [ERROR_PLACEHOLDER, CHALLENGE_PLACEHOLDER])
    if (other !== spec.placeholder && html.includes(other)) return `must not hold ${other} (not a ${kind} placeholder)`;
  return undefined;
}

/** A page split at its placeholder: the edge answers `before + filling + after` (after is '' without one). */
export interface SplitPage {
  before: string;
  after: string;
  hasPlaceholder: boolean;
}

export function splitCustomPage(kind: CustomPageKindName, html: string): SplitPage {
  const p = CUSTOM_PAGE_KINDS[kind].placeholder;
  const at = html.indexOf(p);
  if (at < 0) return { before: html, after: '', hasPlaceholder: false };
  return { before: html.slice(0, at), after: html.slice(at + p.length), hasPlaceholder: true };
}
