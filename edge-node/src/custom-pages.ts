// The domain's custom pages (shared/src/config/custom-pages.ts) as the edge serves them: split once per settings
// object at their placeholder, then each answer is `before + box + after`, the box escaped by the edge. A domain
// without pages costs one WeakMap lookup per page answered (never on the proxied path).
import {
  isCustomPageKind,
  splitCustomPage,
  type CustomPageKindName,
  type DomainSettings,
  type SplitPage,
} from '@platform/shared/config';

export type CustomPages = ReadonlyMap<CustomPageKindName, SplitPage>;

const NONE: CustomPages = new Map();
const compiled = new WeakMap<DomainSettings, CustomPages>();

/** The pages of a domain's settings (compiled at first use per config entry). */
export function customPagesOf(settings: DomainSettings): CustomPages {
  const list = settings.customPages;
  if (!list || list.length === 0) return NONE;
  let pages = compiled.get(settings);
  if (!pages) {
    const m = new Map<CustomPageKindName, SplitPage>();
    for (const p of list) if (isCustomPageKind(p.kind) && p.html !== '') m.set(p.kind, splitCustomPage(p.kind, p.html));
    compiled.set(settings, (pages = m));
  }
  return pages;
}

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The error box of 500_errors, waf_block and ratelimit_block pages: status and why, escaped. */
export function errorBox(status: number, message: string): string {
  return `<p class="edge-error"><strong>Error ${status}</strong>: ${escapeHtml(message.trim())}</p>`;
}

/** The page `page` with `box` in its placeholder (a page without one is served as it is). */
export function fillPage(page: SplitPage, box: string): string {
  return page.hasPlaceholder ? page.before + box + page.after : page.before;
}

/**
 * The domain's page of `kind` for an answer of `status` because of `reason` (in its error box), with the headers of
 * an edge-made HTML page (never stored by a cache, never sniffed) plus `keep`; undefined when the domain has none.
 */
export function pageAnswer(
  pages: CustomPages | undefined,
  kind: Exclude<CustomPageKindName, 'managed_challenge'>,
  status: number,
  reason: string,
  ...keep: [string, string][]
): { headers: [string, string][]; body: string } | undefined {
  const page = pages?.get(kind);
  if (!page) return undefined;
  return {
    headers: [
      ['content-type', 'text/html; charset=utf-8'],
      ['cache-control', 'no-store'],
      ['x-content-type-options', 'nosniff'],
      ...keep,
    ],
    body: fillPage(page, errorBox(status, reason)),
  };
}
