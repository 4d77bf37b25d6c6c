// Requests an attacker can send with one API key must not stop the control plane for everyone else: oversized
// lists are refused before any per-entry work, password hashing runs off the event loop, and parses are linear.
// The control plane runs as its own process (as users run it), so "the API stays responsive" is observed from
// outside: other requests keep being answered while the expensive one is in flight.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, type ControlPlaneProcess } from './sync-harness.js';

let cp: ControlPlaneProcess | undefined;
after(() => cp?.stop());

const DOMAIN = 'abuse.example.org';

/** The fields of the answers these tests read. */
interface Answer {
  error: string;
  errors: unknown;
  users: { username: string; password_hash?: string }[];
  records: unknown[];
  limit_error: string;
}

async function send(method: string, path: string, body: unknown): Promise<{ status: number; json: Answer }> {
  const res = await fetch(`${cp!.apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${cp!.key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/**
 * Runs `slow` and, while it is in flight, one small request after another; returns its result and how many of the
 * small requests were answered before it finished. A blocked event loop answers none of them in the meantime.
 */
async function answeredMeanwhile<T>(slow: Promise<T>): Promise<{ result: T; answered: number }> {
  let done = false;
  const finished = slow.finally(() => {
    done = true;
  });
  let answered = 0;
  const probing = (async () => {
    while (!done) {
      const res = await fetch(`${cp!.apiUrl}/domains/`, { headers: { authorization: `Bearer ${cp!.key}` } });
      await res.arrayBuffer();
      assert.equal(res.status, 200);
      if (!done) answered++;
    }
  })();
  const result = await finished;
  await probing;
  return { result, answered };
}

test('one request cannot hold the control plane', async (t) => {
  cp = await startControlPlane('abuse');
  await cp.api('POST', '/domains/', { name: DOMAIN });
  const rules = `/domains/${DOMAIN}/rules/basic_auth/`;

  await t.test('a basic_auth rule with many users is hashed off the event loop', async () => {
    const users = Array.from({ length: 300 }, (_, i) => ({ username: `user${i}`, password: `secret-${i}` }));
    const { result, answered } = await answeredMeanwhile(send('POST', rules, { users }));
    assert.equal(result.status, 200, JSON.stringify(result.json));
    assert.equal(result.json.users.length, 300);
    assert.deepEqual(result.json.users[299], { username: 'user299' }, 'hashes are never read back');
    assert.ok(answered >= 50, `only ${answered} other requests were answered while 300 passwords were hashed`);
  });

  await t.test('too many basic_auth users: 400 naming the limit', async () => {
    const users = Array.from({ length: 1001 }, (_, i) => ({ username: `u${i}`, password: 'p' }));
    const res = await send('POST', rules, { users });
    assert.equal(res.status, 400);
    assert.match(res.json.error, /users.*1000/);
  });

  await t.test('an invalid basic_auth user is named, and nothing is stored', async () => {
    const users = Array.from({ length: 1000 }, (_, i) => ({ username: `v${i}`, password: 'p' }));
    users[999] = { username: 'bad:name', password: 'p' };
    const res = await send('POST', rules, { users });
    assert.equal(res.status, 400);
    assert.match(res.json.error, /users\[999\]\.username/);
    const list = await cp!.api<unknown[]>('GET', rules);
    assert.equal(list.length, 1, 'only the rule of the first subtest');
  });

  await t.test('record_ids of 800,000 entries: 400 naming the limit (was deduplicated in O(n²) first)', async () => {
    const recordIds = Array.from({ length: 800_000 }, (_, i) => i + 1);
    const res = await send('POST', `/domains/${DOMAIN}/rules/drop/`, { record_ids: recordIds });
    assert.equal(res.status, 400, JSON.stringify(res.json).slice(0, 500));
    assert.match(res.json.error, /record_ids/);
    assert.match(res.json.error, /1000/);
  });

  await t.test('a zone file of 300,000 lines: 400 on the record limit before any record is checked', async () => {
    const lines = Array.from({ length: 300_000 }, (_, i) => `@ 300 IN TXT "v${i}"`);
    const zone = `$ORIGIN ${DOMAIN}.\n${lines.join('\n')}\n`;
    const tooMany = [{ line: 0, error: 'a zone file may hold at most 10000 records' }];
    const imported = await send('POST', `/domains/${DOMAIN}/records/import`, { zone });
    assert.equal(imported.status, 400, JSON.stringify(imported.json).slice(0, 500));
    assert.equal(imported.json.error, 'a zone file may hold at most 10000 records; nothing was imported');
    assert.deepEqual(imported.json.errors, tooMany);
    const preview = await send('POST', `/domains/${DOMAIN}/records/import/parse`, { zone });
    assert.equal(preview.status, 200, JSON.stringify(preview.json).slice(0, 500));
    assert.deepEqual(preview.json.errors, tooMany);
    assert.deepEqual(preview.json.records, []);
    const records = await cp!.api<unknown[]>('GET', `/domains/${DOMAIN}/records/`);
    assert.equal(records.length, 0);
  });

  await t.test('10,000 records at one owner (the file limit) are checked in linear time', async () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => `@ 300 IN TXT "w${i}"`);
    const zone = `$ORIGIN ${DOMAIN}.\n${lines.join('\n')}\n`;
    const res = await send('POST', `/domains/${DOMAIN}/records/import/parse`, { zone });
    assert.equal(res.status, 200, JSON.stringify(res.json).slice(0, 500));
    assert.equal(res.json.records.length, 10_000);
    assert.deepEqual(res.json.errors, []);
    assert.match(res.json.limit_error, /max_records/);
  });
});
