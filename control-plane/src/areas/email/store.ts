// SQL of the email routing area.
import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import type { NodeActivity } from '@platform/mail-node/contract';

export interface RoutingRow {
  domain_id: number;
  enabled: boolean;
  records_locked: boolean;
  catch_all_enabled: boolean;
  catch_all_action: 'drop' | 'forward';
  catch_all_destination: string;
  dkim_selector: string;
  dkim_public_key: string;
  dkim_private_sealed: string;
  managed_record_ids: number[];
  last_check: unknown;
  settings: { dmarc_policy?: 'honor' | 'ignore' };
  created_at: Date | string;
  updated_at: Date | string;
}

export interface AddressRow {
  id: number;
  domain_id: number;
  local_part: string;
  destination: string;
  enabled: boolean;
  created_at: Date | string;
  updated_at: Date | string;
}

export interface DestinationRow {
  id: number;
  user_id: number;
  email: string;
  verified_at: Date | string | null;
  token_hash: string | null;
  token_expires_at: Date | string | null;
  sent_at: Date | string | null;
  created_at: Date | string;
}

export interface ActivityRow extends Omit<NodeActivity, 'domain' | 'action'> {
  id: number | string;
  domain_id: number;
  at: Date | string;
  direction: 'in' | 'out';
  action: string;
}

type Q = Db | Tx;
const rows = async <T>(db: Q, query: ReturnType<typeof sql>) => rowsOf<T>(await db.execute(query));

/** Activity entries kept per domain; older ones are pruned as new ones arrive. */
export const ACTIVITY_KEPT = 5000;

export async function routingOf(db: Q, domainId: number): Promise<RoutingRow | undefined> {
  return (await rows<RoutingRow>(db, sql`SELECT * FROM email_routing WHERE domain_id = ${domainId}`))[0];
}

export async function insertRouting(
  db: Q,
  domainId: number,
  key: { selector: string; publicKeyPem: string; sealedPrivateKey: string },
): Promise<void> {
  await db.execute(sql`INSERT INTO email_routing (domain_id, dkim_selector, dkim_public_key, dkim_private_sealed)
    VALUES (${domainId}, ${key.selector}, ${key.publicKeyPem}, ${key.sealedPrivateKey}) ON CONFLICT (domain_id) DO NOTHING`);
}

export async function updateRouting(db: Q, domainId: number, set: ReturnType<typeof sql>): Promise<RoutingRow> {
  const [row] = await rows<RoutingRow>(
    db,
    sql`UPDATE email_routing SET ${set}, updated_at = now() WHERE domain_id = ${domainId} RETURNING *`,
  );
  return row!;
}

export async function addressesOf(db: Q, domainId: number): Promise<AddressRow[]> {
  return rows<AddressRow>(db, sql`SELECT * FROM email_addresses WHERE domain_id = ${domainId} ORDER BY id`);
}

export async function addressById(db: Q, domainId: number, id: number): Promise<AddressRow | undefined> {
  return (
    await rows<AddressRow>(db, sql`SELECT * FROM email_addresses WHERE domain_id = ${domainId} AND id = ${id}`)
  )[0];
}

export async function countAddresses(db: Q, domainId: number): Promise<number> {
  const [r] = await rows<{ n: number }>(
    db,
    sql`SELECT count(*)::int AS n FROM email_addresses WHERE domain_id = ${domainId}`,
  );
  return Number(r?.n ?? 0);
}

export async function destinationsOf(db: Q, userId: number): Promise<DestinationRow[]> {
  return rows<DestinationRow>(db, sql`SELECT * FROM email_destinations WHERE user_id = ${userId} ORDER BY id`);
}

export async function destinationByEmail(db: Q, userId: number, email: string): Promise<DestinationRow | undefined> {
  return (
    await rows<DestinationRow>(db, sql`SELECT * FROM email_destinations WHERE user_id = ${userId} AND email = ${email}`)
  )[0];
}

export async function countDestinations(db: Q, userId: number): Promise<number> {
  const [r] = await rows<{ n: number }>(
    db,
    sql`SELECT count(*)::int AS n FROM email_destinations WHERE user_id = ${userId}`,
  );
  return Number(r?.n ?? 0);
}

export async function insertDestination(db: Q, userId: number, email: string): Promise<DestinationRow> {
  await db.execute(
    sql`INSERT INTO email_destinations (user_id, email) VALUES (${userId}, ${email}) ON CONFLICT (user_id, email) DO NOTHING`,
  );
  return (await destinationByEmail(db, userId, email))!;
}

type ActivityEntry = Partial<ActivityRow> & { action: string };

/** Appends entries to the domain's log in one statement, then prunes it to the newest ACTIVITY_KEPT. */
export async function addActivity(db: Q, domainId: number, ...entries: ActivityEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const values = entries.map(
    (e) => sql`(${domainId}, ${e.direction ?? 'in'}, ${e.mail_from ?? ''}, ${e.rcpt_to ?? ''}, ${e.destination ?? ''},
      ${e.message_id ?? ''}, ${e.size ?? 0}, ${e.spf ?? ''}, ${e.dkim ?? ''}, ${e.dmarc ?? ''}, ${e.action},
      ${e.reason ?? ''}, ${e.smtp_response ?? ''})`,
  );
  await db.execute(sql`INSERT INTO email_activity
    (domain_id, direction, mail_from, rcpt_to, destination, message_id, size, spf, dkim, dmarc, action, reason, smtp_response)
    VALUES ${sql.join(values, sql`, `)}`);
  // Bounded log: the entries beyond the newest ACTIVITY_KEPT go. The walk down the (domain_id, id) index costs
  // ACTIVITY_KEPT steps, so it runs once in 64 appends (the log holds at most ACTIVITY_KEPT + 64 × batch entries).
  if (Math.random() < 1 / 64)
    await db.execute(sql`DELETE FROM email_activity WHERE domain_id = ${domainId} AND id <= (
      SELECT id FROM email_activity WHERE domain_id = ${domainId} ORDER BY id DESC OFFSET ${ACTIVITY_KEPT} LIMIT 1)`);
}

export async function activityOf(
  db: Q,
  domainId: number,
  opts: { direction: 'in' | 'out'; limit: number; before?: number | undefined },
): Promise<ActivityRow[]> {
  const before = opts.before !== undefined ? sql`AND id < ${opts.before}` : sql``;
  return rows<ActivityRow>(
    db,
    sql`SELECT * FROM email_activity WHERE domain_id = ${domainId} AND direction = ${opts.direction} ${before}
      ORDER BY id DESC LIMIT ${opts.limit}`,
  );
}

export async function activityCounts(db: Q, domainId: number, sinceMs: number): Promise<Record<string, number>> {
  const list = await rows<{ action: string; n: number }>(
    db,
    sql`SELECT action, count(*)::int AS n FROM email_activity
      WHERE domain_id = ${domainId} AND at >= ${new Date(sinceMs).toISOString()}::timestamptz GROUP BY action`,
  );
  return Object.fromEntries(list.map((r) => [r.action, Number(r.n)]));
}

/** Today's (UTC) forwards and sends of the domain. */
export async function todayCounts(db: Q, domainId: number): Promise<{ forwards: number; sends: number }> {
  const [r] = await rows<{ forwards: number; sends: number }>(
    db,
    sql`SELECT forwards, sends FROM email_daily_counts
      WHERE domain_id = ${domainId} AND day = (now() AT TIME ZONE 'UTC')::date`,
  );
  return { forwards: Number(r?.forwards ?? 0), sends: Number(r?.sends ?? 0) };
}

/**
 * Takes one of today's forwards (or sends) of the domain if fewer than `limit` were taken: one statement, so
 * concurrent messages never pass the limit together. True when taken.
 */
export async function takeDaily(db: Q, domainId: number, kind: 'forwards' | 'sends', limit: number): Promise<boolean> {
  if (limit <= 0) return false;
  const column = kind === 'forwards' ? sql.raw('forwards') : sql.raw('sends');
  const taken = await rows<{ n: number }>(
    db,
    sql`INSERT INTO email_daily_counts AS c (domain_id, day, ${column})
      VALUES (${domainId}, (now() AT TIME ZONE 'UTC')::date, 1)
      ON CONFLICT (domain_id, day) DO UPDATE SET ${column} = c.${column} + 1 WHERE c.${column} < ${limit}
      RETURNING c.${column} AS n`,
  );
  return taken.length > 0;
}

/** Gives back one taken forward (the destination refused the message for good, or it was deferred). */
export async function giveBackDaily(db: Q, domainId: number, kind: 'forwards' | 'sends'): Promise<void> {
  const column = kind === 'forwards' ? sql.raw('forwards') : sql.raw('sends');
  await db.execute(sql`UPDATE email_daily_counts SET ${column} = greatest(${column} - 1, 0)
    WHERE domain_id = ${domainId} AND day = (now() AT TIME ZONE 'UTC')::date`);
}
