// The user-agent category of the request log: the categories of real user agents, and a classifier that reads a
// bounded prefix of whatever a client sends (a huge or hostile header costs what its first MAX_UA_CHARS cost).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress } from '@platform/shared/match';
import { prng } from '@platform/shared/testing/prng';
import { RequestContext } from '../context.js';
import { MAX_UA_CHARS } from '../rules/bot.js';
import { RequestLogBuffer } from './buffer.js';
import { userAgentCategory } from './ua-category.js';

test('user-agent categories', () => {
  const cases: [string | undefined, string][] = [
    [undefined, 'empty'],
    ['', 'empty'],
    ['   ', 'empty'],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      'browser',
    ],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:132.0) Gecko/20100101 Firefox/132.0', 'browser'],
    ['Opera/9.80 (Windows NT 6.1) Presto/2.12.388 Version/12.16', 'browser'],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
      'mobile',
    ],
    [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
      'mobile',
    ],
    ['Mozilla/5.0 (Linux; Android 12; CUBOT X50) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36', 'mobile'],
    ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'crawler'],
    ['Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)', 'crawler'],
    ['Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)', 'crawler'],
    [
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
      'ai_crawler',
    ],
    [
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
      'ai_crawler',
    ],
    ['CCBot/2.0 (https://commoncrawl.org/faq/)', 'ai_crawler'],
    ['curl/8.5.0', 'library'],
    ['python-requests/2.32.3', 'library'],
    ['Go-http-client/1.1', 'library'],
    [
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36',
      'library',
    ],
    ['SomethingElse/1.0', 'other'],
  ];
  for (const [ua, want] of cases) assert.equal(userAgentCategory(ua), want, String(ua));
  // Again in a random order, each value a new string (as uWS gives it), with other values in between: the memos in
  // front of the classifier answer as it does.
  const random = prng(3);
  for (let i = 0; i < 5000; i++) {
    const [ua, want] = cases[Math.floor(random() * cases.length)]!;
    assert.equal(userAgentCategory(ua?.split('').join('')), want, String(ua));
    assert.equal(userAgentCategory(`curl/${i}`), 'library');
  }
});

test('user-agent category: a huge or hostile header is classified by its first characters only', () => {
  // 8 MiB of text that looks almost like every token: classified as its bounded prefix, the rest never read.
  const near = 'googlebo gptbo curl python-request mobil mozilla/ '.repeat(200_000);
  assert.equal(userAgentCategory(near), userAgentCategory(near.slice(0, MAX_UA_CHARS)));
  assert.equal(userAgentCategory(near), 'other');
  // A token past the bound is not seen.
  assert.equal(userAgentCategory(`Mozilla/5.0 ${'a'.repeat(MAX_UA_CHARS)} GPTBot/1.0`), 'browser');
  assert.equal(userAgentCategory(`Mozilla/5.0 GPTBot/1.0 ${'a'.repeat(10_000_000)}`), 'ai_crawler');
  // Control characters, NUL, unpaired surrogates, non-ASCII: no throw, a category.
  for (const odd of ['\u0000\u0001\u0002', '\ud800\udfff\ud800', 'Ｍｏｚｉｌｌａ/5.0', '\u212a\u0130bot'])
    assert.ok(typeof userAgentCategory(odd) === 'string');
  // Many distinct values: the memo stays bounded and answers stay right.
  for (let i = 0; i < 20_000; i++) assert.equal(userAgentCategory(`curl/${i}`), 'library');
});

test('the log record carries the later fields the request lifecycle filled', () => {
  const buffer = new RequestLogBuffer(10);
  const ctx = (scheme: 'http' | 'https', ua?: string) =>
    new RequestContext({
      method: 'GET',
      host: 'a.example.org',
      path: '/',
      query: '',
      headers: ua === undefined ? [] : [['user-agent', ua]],
      peer: parsePeerAddress('192.0.2.9'),
      scheme,
      startedAt: performance.now(),
    });
  const fromOrigin = ctx('https', 'curl/8');
  fromOrigin.status = 200;
  fromOrigin.upstreamMs = 12;
  fromOrigin.originBytes = 2048;
  fromOrigin.markdown = true;
  buffer.add(fromOrigin);
  const hit = ctx('http', 'Mozilla/5.0 (compatible; Googlebot/2.1)');
  hit.status = 200;
  hit.cacheStatus = 'HIT';
  buffer.add(hit);
  const limited = ctx('http');
  limited.status = 429;
  limited.unserved = 'rate_limited';
  limited.rateLimitRule = 4;
  limited.rateLimitKey = 'ip=192.0.2.9';
  buffer.add(limited);
  const gone = ctx('https', 'Mozilla/5.0 (Windows NT 10.0)');
  gone.status = 499;
  buffer.add(gone);
  const [a, b, c, d] = buffer.drain();
  assert.deepEqual(
    [a.tls, a.proto, a.ua, a.served, a.unserved, a.originBytes, a.md, a.rlRule],
    ['TLS', 'HTTP/1.1', 'library', 'origin', undefined, 2048, true, undefined],
  );
  assert.deepEqual([b.tls, b.ua, b.served, b.originBytes, b.md], ['none', 'crawler', 'cache', undefined, undefined]);
  assert.deepEqual(
    [c.ua, c.served, c.unserved, c.rlRule, c.rlKey],
    ['empty', 'edge', 'rate_limited', 4, 'ip=192.0.2.9'],
  );
  assert.deepEqual([d.ua, d.served, d.unserved], ['browser', 'edge', 'client_aborted']);
});
