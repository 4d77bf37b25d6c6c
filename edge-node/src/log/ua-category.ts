// The user-agent category of the request log: what the User-Agent header says of the client, in one of
// UA_CATEGORIES. Reads at most MAX_UA_CHARS characters (a longer value is classified by its start) and looks for a
// fixed list of tokens in them: linear in the bounded input, whatever a client sends.
import type { UaCategory } from '@platform/shared/types';
import { StringSlotMemo } from '../string-slot.js';
import { AI_CRAWLER_TOKENS, AUTOMATION_TOKENS, DEVICE_NAMES, MAX_UA_CHARS, SEARCH_CRAWLERS } from '../rules/bot.js';

/** Words of self-declared crawlers (SEO, monitoring, feed readers) among the automation tokens. */
const CRAWLER_WORDS: readonly string[] = ['bot', 'crawler', 'spider', 'slurp'];
const SEARCH_TOKENS: readonly string[] = SEARCH_CRAWLERS.flatMap((f) => f.tokens);
const LIBRARY_TOKENS: readonly string[] = AUTOMATION_TOKENS.filter((t) => !CRAWLER_WORDS.includes(t));
/** Phones and tablets: their browsers' user agents name the platform or say Mobile. */
const MOBILE_TOKENS: readonly string[] = ['mobile', 'android', 'iphone', 'ipad', 'ipod', 'windows phone', 'blackberry'];

const has = (ua: string, tokens: readonly string[]): boolean => {
  for (const t of tokens) if (ua.includes(t)) return true;
  return false;
};

/** Recent answers by user agent (browsers send a few thousand distinct ones): bounded, emptied when full. */
const memo = new Map<string, UaCategory>();
const MEMO_MAX = 4096;
/**
 * In front of it, the most recent ones direct-mapped (string-slot.ts): a request's User-Agent is a new string, which
 * a Map lookup hashes whole (~100 characters for a browser's); a slot is found from 32 of them and confirmed by one
 * comparison.
 */
const recent = new StringSlotMemo<UaCategory>(256, categoryOf, 'empty');

/**
 * `empty` (no or blank header), `ai_crawler` (AI companies' crawlers and fetchers), `crawler` (search engines and
 * self-declared bots), `library` (HTTP libraries, command-line and headless clients, scanners), `mobile` (a phone or
 * tablet browser), `browser` (a desktop browser: Mozilla/… or Opera/…), else `other`.
 */
export function userAgentCategory(header: string | undefined): UaCategory {
  if (header === undefined) return 'empty';
  const raw = header.length > MAX_UA_CHARS ? header.slice(0, MAX_UA_CHARS) : header;
  return recent.get(raw);
}

function categoryOf(raw: string): UaCategory {
  let category = memo.get(raw);
  if (category === undefined) {
    category = classify(raw.toLowerCase());
    if (memo.size >= MEMO_MAX) memo.clear();
    memo.set(raw, category);
  }
  return category;
}

function classify(ua: string): UaCategory {
  if (ua.trim() === '') return 'empty';
  if (has(ua, AI_CRAWLER_TOKENS)) return 'ai_crawler';
  if (has(ua, SEARCH_TOKENS)) return 'crawler';
  let words = ua;
  for (const d of DEVICE_NAMES) if (words.includes(d)) words = words.split(d).join(' ');
  if (has(words, LIBRARY_TOKENS)) return 'library';
  if (has(words, CRAWLER_WORDS)) return 'crawler';
  if (!ua.startsWith('mozilla/') && !ua.startsWith('opera')) return 'other';
  return has(ua, MOBILE_TOKENS) ? 'mobile' : 'browser';
}
