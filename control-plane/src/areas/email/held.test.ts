// Held messages at rest (held.ts): sealed bound to their id, bounded per message and per domain, the workflow start
// recorded with the hold; and the mail node's hold route refusing malformed or oversized input before any work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { rowsOf } from '../../db/migrate.js';
import { holdMessage, openHeld, sealHeld } from './held.js';

test('a sealed held message opens only with its key and id', () => {
  const key = randomBytes(32);
  const raw = Buffer.from('Subject: hi\r\n\r\nsecret body\r\n');
  const sealed = sealHeld(key, 'a'.repeat(32), raw);
  assert.ok(!Buffer.from(sealed, 'base64').includes('secret body'));
  assert.deepEqual(openHeld(key, 'a'.repeat(32), sealed), raw);
  assert.throws(() => openHeld(key, 'b'.repeat(32), sealed));
  assert.throws(() => openHeld(randomBytes(32), 'a'.repeat(32), sealed));
});

test('holding: sealed in the database, a workflow start with it, bounded per message and per domain', async (t) => {
  const nodeToken = 'held-test-node-token-0123456789abc';
  const cp = await startTestControlPlane(t, {
    // A Temporal address makes holding possible (this in-process app has no dispatcher: the start stays recorded).
    TEMPORAL_ADDRESS: '127.0.0.1:9',
    NODE_TOKEN: nodeToken,
    MAIL_HOLD_MAX_BYTES: '2048',
    MAIL_HOLD_MAX_PER_DOMAIN: '1',
    MAIL_RESOLVERS: '127.0.0.1:9',
  });
  const u = await cp.user();
  await cp.domain(u.key, 'held.test');
  assert.equal((await cp.call(u.key, 'POST', '/domains/held.test/email/enable')).statusCode, 200);
  const msg = (text: string) => ({
    domain: 'held.test',
    mail_from: 'x@sender.test',
    envelope_from: 'SRS0=abcd=AB=sender.test=x@held.test',
    rcpt_to: 'info@held.test',
    destination: 'dest@dest.test',
    message_id: '<1@sender.test>',
    spf: 'pass',
    dkim: 'none',
    dmarc: 'none',
    smtp_response: '451 4.2.1 try later',
    raw: Buffer.from(`Subject: x\r\n\r\n${text}\r\n`).toString('base64'),
  });
  const first = await holdMessage(cp.app, msg('plain-marker-one'));
  assert.equal(first.held, true);
  const [row] = rowsOf<{ sealed: string; id: string }>(await cp.database.db.execute(sql`SELECT * FROM email_held`));
  assert.ok(row);
  assert.ok(!Buffer.from(row.sealed, 'base64').includes('plain-marker-one'));
  const [start] = rowsOf<{ workflow_id: string; workflow_type: string; args: unknown }>(
    await cp.database.db.execute(sql`SELECT * FROM workflow_outbox WHERE workflow_type = 'retryHeldEmail'`),
  );
  assert.equal(start?.workflow_id, `email-retry:${row.id}`);
  assert.ok(!JSON.stringify(start.args).includes('plain-marker'), 'the workflow gets the id, not the content');
  // The domain's hold is full: not held (the mail node answers 451, the sender's MTA keeps it).
  assert.deepEqual(await holdMessage(cp.app, msg('two')), {
    held: false,
    reason: 'the domain already holds 1 messages for retry',
  });
  // Larger than MAIL_HOLD_MAX_BYTES: not held.
  assert.equal((await holdMessage(cp.app, msg('x'.repeat(3000)))).held, false);

  // The route: node token only; malformed or oversized bodies are 400 before any work.
  const post = (body: unknown, token: string | null = nodeToken) =>
    cp.call(token, 'POST', '/internal/email/held', body);
  assert.equal((await post(msg('y'), u.key)).statusCode, 403);
  assert.equal((await post({ ...msg('y'), raw: 'not base64!' })).statusCode, 400);
  assert.equal((await post({ ...msg('y'), raw: 'A'.repeat(8000) })).statusCode, 400);
  assert.equal((await post({ ...msg('y'), rcpt_to: 'a'.repeat(400) })).statusCode, 400);
  const attempt = (id: string, body: unknown) => cp.call(nodeToken, 'POST', `/internal/email/held/${id}/attempt`, body);
  assert.equal((await attempt('../x', { attempt: 2, final: false })).statusCode, 404);
  assert.equal((await attempt('0'.repeat(32), { attempt: 1, final: false })).statusCode, 400);
  // An id nothing holds: gone (the workflow ends).
  assert.deepEqual((await attempt('0'.repeat(32), { attempt: 2, final: false })).json(), { outcome: 'gone' });
});
