// Held messages: a message the mail node accepted whose destination answered with a temporary failure (4xx) is kept
// here, sealed, and retried on the schedule of the `retryHeldEmail` workflow (workflows/src/workflows/
// retry-held-email.ts, id `email-retry:<id>`, started through the workflow outbox in the hold's transaction). Each
// attempt and the end (delivered, or bounced after the last attempt) is an activity-log entry. The content exists in
// plain form only in memory: at rest it is AES-256-GCM under a key derived from DATA_DIR/email-hold-key (never in the
// database), bound to the row's id; Temporal's history holds only the id. Rows go when the message is delivered or
// bounced; any row past its expiry (the schedule's length and an hour) is purged at the next hold.
import { hkdfSync, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import { openAesGcm, sealAesGcm } from '@platform/shared/config';
import { ensureSecret } from '@platform/shared/node-token';
import type { HeldMessage, NodeActivity } from '@platform/mail-node/contract';
import { deliver } from '@platform/mail-node/deliver';
import { rowsOf } from '../../db/migrate.js';
import { enqueueWorkflows } from '../../workflow-outbox/outbox.js';
import { openDkimKey } from './keys.js';
import { addActivity, giveBackDaily, routingOf } from './store.js';
import { deliveryContext, emailConfig } from './service.js';

export const HOLD_KEY_FILE = 'email-hold-key';
export const RETRY_WORKFLOW = 'retryHeldEmail';

const holdKeys = new WeakMap<FastifyInstance, Buffer>();
function holdKey(app: FastifyInstance): Buffer {
  let key = holdKeys.get(app);
  if (!key) {
    const secret = ensureSecret(app.config.dataDir, HOLD_KEY_FILE);
    key = Buffer.from(hkdfSync('sha256', secret, 'platform-email-hold', 'held email messages at rest v1', 32));
    holdKeys.set(app, key);
  }
  return key;
}

export function sealHeld(key: Buffer, id: string, raw: Buffer): string {
  return sealAesGcm(key, id, raw).toString('base64');
}

export function openHeld(key: Buffer, id: string, sealed: string): Buffer {
  return openAesGcm(key, id, Buffer.from(sealed, 'base64'));
}

const seconds = (ms: number) =>
  ms >= 3_600_000 ? `${ms / 3_600_000} h` : ms >= 60_000 ? `${ms / 60_000} min` : `${ms / 1000} s`;

/** The reply to the mail node: held (it answers 250) or not (it answers 451 as before: the sender's MTA retries). */
export type HoldReply = { held: true; id: string; attempts: number } | { held: false; reason: string };

/**
 * Holds `msg` for retry: one transaction stores the sealed message, records the deferral (attempt 1 of N) and the
 * workflow start; the outbox dispatcher starts it. Refused (not held) when workflows are off (nothing would retry),
 * the message is larger than MAIL_HOLD_MAX_BYTES, or the domain already holds MAIL_HOLD_MAX_PER_DOMAIN messages.
 */
export async function holdMessage(app: FastifyInstance, msg: HeldMessage): Promise<HoldReply> {
  const cfg = emailConfig(app);
  if (!app.config.temporal.address) return { held: false, reason: 'no workflows to retry it (TEMPORAL_ADDRESS)' };
  const raw = Buffer.from(msg.raw, 'base64');
  if (raw.length > cfg.holdMaxBytes) return { held: false, reason: `larger than ${cfg.holdMaxBytes} bytes` };
  const [domain] = rowsOf<{ id: number }>(await app.db.execute(sql`SELECT id FROM domains WHERE name = ${msg.domain}`));
  if (!domain) return { held: false, reason: 'no such domain' };
  const id = randomBytes(16).toString('hex');
  const delays = cfg.retryDelaysMs;
  const attempts = delays.length + 1;
  const keepMs = delays.reduce((a, b) => a + b, 0) + 3_600_000;
  const sealed = sealHeld(holdKey(app), id, raw);
  const held = await app.db.transaction(async (tx) => {
    await tx.execute(sql`DELETE FROM email_held WHERE expires_at < now()`);
    const [n] = rowsOf<{ n: number }>(
      await tx.execute(sql`SELECT count(*)::int AS n FROM email_held WHERE domain_id = ${domain.id}`),
    );
    if (Number(n?.n ?? 0) >= cfg.holdMaxPerDomain) return false;
    await tx.execute(sql`INSERT INTO email_held (id, domain_id, mail_from, envelope_from, rcpt_to, destination,
        message_id, size, spf, dkim, dmarc, attempts, sealed, expires_at)
      VALUES (${id}, ${domain.id}, ${msg.mail_from}, ${msg.envelope_from}, ${msg.rcpt_to}, ${msg.destination},
        ${msg.message_id}, ${raw.length}, ${msg.spf}, ${msg.dkim}, ${msg.dmarc}, 1, ${sealed},
        now() + make_interval(secs => ${keepMs / 1000}))`);
    await addActivity(tx, domain.id, {
      mail_from: msg.mail_from,
      rcpt_to: msg.rcpt_to,
      destination: msg.destination,
      message_id: msg.message_id,
      size: raw.length,
      spf: msg.spf,
      dkim: msg.dkim,
      dmarc: msg.dmarc,
      action: 'deferred',
      reason: `attempt 1 of ${attempts}: the destination answered with a temporary failure; held for retry, next attempt in ${seconds(delays[0]!)}`,
      smtp_response: msg.smtp_response.slice(0, 512),
    });
    await enqueueWorkflows(tx, [
      {
        workflowId: `email-retry:${id}`,
        kind: 'start',
        workflowType: RETRY_WORKFLOW,
        args: [{ id, delaysMs: delays }],
      },
    ]);
    return true;
  });
  if (!held) return { held: false, reason: `the domain already holds ${cfg.holdMaxPerDomain} messages for retry` };
  app.workflowOutbox.nudge();
  return { held: true, id, attempts };
}

interface HeldRow extends Pick<
  NodeActivity,
  'mail_from' | 'rcpt_to' | 'destination' | 'message_id' | 'size' | 'spf' | 'dkim' | 'dmarc'
> {
  id: string;
  domain_id: number;
  name: string;
  envelope_from: string;
  attempts: number;
  sealed: string;
}

/** What an attempt came to: the workflow stops unless `temporary`. */
export type AttemptOutcome = 'delivered' | 'bounced' | 'temporary' | 'gone';

/**
 * Attempt number `attempt` of held message `id` (the workflow's retries are attempts 2…N). An attempt is claimed
 * once (attempts = attempt - 1 → attempt): an activity retried after its answer was lost does not deliver twice.
 * `final`: a temporary failure now is the end (bounced after N attempts).
 */
export async function attemptHeld(
  app: FastifyInstance,
  id: string,
  attempt: number,
  final: boolean,
): Promise<{ outcome: AttemptOutcome }> {
  const [row] = rowsOf<HeldRow>(
    await app.db.execute(sql`UPDATE email_held h SET attempts = ${attempt} FROM domains d
      WHERE h.id = ${id} AND h.attempts = ${attempt - 1} AND d.id = h.domain_id RETURNING h.*, d.name`),
  );
  if (!row) {
    const [still] = rowsOf<{ id: string }>(await app.db.execute(sql`SELECT id FROM email_held WHERE id = ${id}`));
    return { outcome: still ? 'temporary' : 'gone' };
  }
  const total = emailConfig(app).retryDelaysMs.length + 1;
  const base = {
    mail_from: row.mail_from,
    rcpt_to: row.rcpt_to,
    destination: row.destination,
    message_id: row.message_id,
    size: row.size,
    spf: row.spf,
    dkim: row.dkim,
    dmarc: row.dmarc,
  };
  const end = async (action: 'forwarded' | 'bounced', reason: string, response: string) => {
    await app.db.transaction(async (tx) => {
      await tx.execute(sql`DELETE FROM email_held WHERE id = ${id}`);
      await addActivity(tx, row.domain_id, { ...base, action, reason, smtp_response: response.slice(0, 512) });
      if (action === 'bounced') await giveBackDaily(tx, row.domain_id, 'forwards');
    });
  };
  const routing = await routingOf(app.db, row.domain_id);
  if (!routing?.enabled) {
    await end('bounced', `attempt ${attempt} of ${total}: email routing of the domain was turned off; dropped`, '');
    return { outcome: 'bounced' };
  }
  const raw = openHeld(holdKey(app), id, row.sealed);
  const result = await deliver(deliveryContext(app), {
    from: row.envelope_from,
    to: row.destination,
    raw,
    dkim: {
      domainName: row.name,
      keySelector: routing.dkim_selector,
      privateKey: openDkimKey(app, row.name, routing.dkim_selector, routing.dkim_private_sealed),
    },
  }).catch((err: unknown) => ({
    ok: false as const,
    temporary: true,
    code: 451,
    response: (err as Error).message.slice(0, 300),
    host: '',
  }));
  const response = result.response.replace(/[\r\n]+/g, ' ');
  if (result.ok) {
    await end('forwarded', `delivered on attempt ${attempt} of ${total} (held for retry)`, response);
    return { outcome: 'delivered' };
  }
  if (!result.temporary) {
    await end('bounced', `attempt ${attempt} of ${total}: the destination refused the message`, response);
    return { outcome: 'bounced' };
  }
  if (final) {
    await end(
      'bounced',
      `bounced after ${attempt} attempts: the destination kept answering with a temporary failure`,
      response,
    );
    return { outcome: 'bounced' };
  }
  const next = emailConfig(app).retryDelaysMs[attempt - 1];
  await addActivity(app.db, row.domain_id, {
    ...base,
    action: 'deferred',
    reason: `attempt ${attempt} of ${total}: temporary failure; next attempt in ${next ? seconds(next) : '—'}`,
    smtp_response: response.slice(0, 512),
  });
  return { outcome: 'temporary' };
}
