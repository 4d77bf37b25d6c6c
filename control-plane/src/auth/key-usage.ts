// Requests per API key per UTC day (the panel's 30-day chart of each key). Counting is a Map increment on the
// request path; every FLUSH_MS the process adds its counts to api_key_usage_days in one statement, so the hot path
// never writes to the database for it. A crash loses at most the last FLUSH_MS of counts (a chart, not billing).
import { sql } from 'drizzle-orm';
import type { Db } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';

export const FLUSH_MS = 5_000;
export const USAGE_DAYS = 30;

export class KeyUsage {
  /** `${keyId}|${YYYY-MM-DD}` → requests not yet added to the table. */
  private pending = new Map<string, number>();

  count(keyId: number, now = new Date()): void {
    const k = `${keyId}|${now.toISOString().slice(0, 10)}`;
    this.pending.set(k, (this.pending.get(k) ?? 0) + 1);
  }

  /** Adds the pending counts to the table (one statement) and forgets them; counts of a failed write are kept. */
  async flush(db: Db): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const ids: number[] = [];
    const days: string[] = [];
    const counts: number[] = [];
    for (const [k, n] of batch) {
      const [id, day] = k.split('|');
      ids.push(Number(id));
      days.push(day!);
      counts.push(n);
    }
    try {
      // A key deleted meanwhile is skipped (the join), not an error.
      await db.execute(sql`INSERT INTO api_key_usage_days (key_id, day, requests)
        SELECT u.key_id, u.day, u.requests
        FROM unnest(${`{${ids.join(',')}}`}::int[], ${`{${days.join(',')}}`}::date[], ${`{${counts.join(',')}}`}::bigint[])
          AS u(key_id, day, requests)
        JOIN api_keys k ON k.id = u.key_id
        ON CONFLICT (key_id, day) DO UPDATE SET requests = api_key_usage_days.requests + EXCLUDED.requests`);
    } catch (err) {
      for (const [k, n] of batch) this.pending.set(k, (this.pending.get(k) ?? 0) + n);
      throw err;
    }
  }
}

/** The key's requests on each of the last USAGE_DAYS UTC days, oldest first, days without requests as 0. */
export async function usageByDay(
  db: Db,
  keyId: number,
  now = new Date(),
): Promise<{ day: string; requests: number }[]> {
  const first = new Date(now.getTime() - (USAGE_DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
  const rows = rowsOf<{ day: string; requests: string | number }>(
    await db.execute(sql`SELECT to_char(day, 'YYYY-MM-DD') AS day, requests FROM api_key_usage_days
      WHERE key_id = ${keyId} AND day >= ${first}::date`),
  );
  const byDay = new Map(rows.map((r) => [r.day, Number(r.requests)]));
  const out: { day: string; requests: number }[] = [];
  for (let i = USAGE_DAYS - 1; i >= 0; i--) {
    const day = new Date(now.getTime() - i * 86_400_000).toISOString().slice(0, 10);
    out.push({ day, requests: byDay.get(day) ?? 0 });
  }
  return out;
}
