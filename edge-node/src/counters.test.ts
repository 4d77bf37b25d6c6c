// The request counters: every (status, cache result) pair lands in its own cell and is reported with its labels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CACHE_RESULTS, RequestCounters, sumRequestCounters } from './counters.js';

test('each cache result and status is counted under its own labels; out-of-range statuses as 0', () => {
  const c = new RequestCounters();
  const want = new Map<string, number>();
  CACHE_RESULTS.forEach((cache, i) => {
    for (let n = 0; n <= i; n++) c.count(200, cache);
    c.count(404, cache);
    c.count(-1, cache);
    c.count(600, cache);
    const label = cache || 'NONE';
    want.set(`200 ${label}`, i + 1);
    want.set(`404 ${label}`, 1);
    want.set(`0 ${label}`, 2);
  });
  const got = new Map(c.samples().map(([l, n]) => [`${l.status} ${l.cache}`, n]));
  assert.deepEqual(got, want);
  const sum = sumRequestCounters([c.nonZero(), c.nonZero()], new RequestCounters());
  assert.deepEqual(
    new Map(sum.samples().map(([l, n]) => [`${l.status} ${l.cache}`, n])),
    new Map([...want].map(([k, n]) => [k, 2 * n])),
  );
});
