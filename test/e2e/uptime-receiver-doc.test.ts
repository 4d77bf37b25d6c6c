// The receiver example of docs/uptime.md, run as written: it accepts a correctly signed event, and answers 401 to a
// wrong signature and to a timestamp older than its limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webhookSignature, WEBHOOK_USER_AGENT } from '../../workflows/src/uptime/sign.js';
import { webhookBody } from '../../workflows/src/uptime/webhook-activities.js';
import { freePort } from './sync-harness.js';
import { eventually } from '../helpers/workflows-harness.js';

const DOC = new URL('../../docs/uptime.md', import.meta.url);

test('docs/uptime.md: the TypeScript receiver verifies the signature and the timestamp age', async (t) => {
  const text = readFileSync(DOC, 'utf8');
  const block = /## A receiver in TypeScript[\s\S]*?```ts\n([\s\S]*?)```/.exec(text)?.[1];
  assert.ok(block, 'the example is in the document');
  const dir = mkdtempSync(join(tmpdir(), 'uptime-receiver-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'receiver.ts');
  writeFileSync(file, block);
  const port = await freePort();
  const secret = 'whsec_doc_example';
  const proc = spawn(process.execPath, ['--import', 'tsx', file], {
    env: { ...process.env, PORT: String(port), UPTIME_WEBHOOK_SECRET: secret },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  t.after(() => proc.kill());

  const post = (timestamp: number, signWith: string) => {
    const body = webhookBody(
      { event: 'outage.opened', incident_id: 7, domain: 'example.org', hostname: 'www.example.org' },
      timestamp,
    );
    return fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': WEBHOOK_USER_AGENT,
        'x-service-event': 'outage.opened',
        'x-service-timestamp': String(timestamp),
        'x-service-signature': webhookSignature(signWith, timestamp, body),
      },
      body,
    });
  };
  const now = Math.floor(Date.now() / 1000);
  const ok = await eventually('the example receiver to answer', async () => {
    if (proc.exitCode !== null) throw new Error(`receiver exited: ${out}`);
    return post(now, secret).catch(() => undefined);
  });
  assert.equal(ok.status, 204);
  const forged = await post(now, 'whsec_other');
  assert.deepEqual([forged.status, await forged.text()], [401, 'bad signature']);
  const replayed = await post(now - 600, secret);
  assert.deepEqual([replayed.status, await replayed.text()], [401, 'timestamp too old']);
  assert.match(out, /outage\.opened www\.example\.org/);
});
