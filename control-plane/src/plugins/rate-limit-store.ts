// Request counters of the rate limit: fixed windows that start with a key's first request (as @fastify/rate-limit's
// own store counts). In the database when it is a Postgres server, so every control-plane process behind one
// address counts against the same budget; in memory with PGlite, which only one process can open.
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';

/** The rate limit's window: requests are counted per minute. */
export const RATE_WINDOW_MS = 60_000;

/** The counter of an API key's requests (the per-key limit). */
export const keyBucket = (keyId: number) => `key:${keyId}`;
/** keyBucket in SQL, for a statement that counts a key it looks up itself. */
export const keyBucketSql = (idColumn: SQL) => sql`'key:' || ${idColumn}`;

export interface WindowCount {
  /** Requests in the current window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  ttlMs: number;
}

export interface CounterStore {
  /** Counts one request of `key` and returns the window's count so far. */
  hit(key: string, windowMs: number): Promise<WindowCount>;
  /** Forgets windows that ended before `windowMs` ago. */
  prune(windowMs: number): Promise<void>;
}

export class MemoryCounterStore implements CounterStore {
  private readonly windows = new Map<string, { startedAt: number; hits: number }>();

  hit(key: string, windowMs: number): Promise<WindowCount> {
    const now = Date.now();
    let w = this.windows.get(key);
    if (!w || w.startedAt + windowMs <= now) {
      w = { startedAt: now, hits: 0 };
      this.windows.set(key, w);
    }
    w.hits++;
    return Promise.resolve({ count: w.hits, ttlMs: w.startedAt + windowMs - now });
  }

  prune(windowMs: number): Promise<void> {
    const cutoff = Date.now() - windowMs;
    for (const [key, w] of this.windows) if (w.startedAt <= cutoff) this.windows.delete(key);
    return Promise.resolve();
  }
}

/** What hitStatement returns for each counter it hit. */
export interface HitRow {
  hits: number | string;
  ttl_ms: number | string;
}

export function windowCount(row: HitRow): WindowCount {
  return { count: Number(row.hits), ttlMs: Math.max(0, Number(row.ttl_ms)) };
}

/**
 * The upsert that counts one request: `rows` gives (key, now(), 1) for each counter to hit (a VALUES list, or a
 * SELECT, so another statement can count in the same round trip: authenticate.ts with the key lookup). Returns
 * `hits` and `ttl_ms` (HitRow).
 */
export function hitStatement(rows: SQL, windowMs: number): SQL {
  const window = sql`make_interval(secs => ${windowMs / 1000})`;
  // SET reads the old row: both CASEs see the window as it was before this request.
  return sql`
    INSERT INTO rate_limit_counters AS c (key, window_started_at, hits) ${rows}
    ON CONFLICT (key) DO UPDATE SET
      hits = CASE WHEN c.window_started_at > now() - ${window} THEN c.hits + 1 ELSE 1 END,
      window_started_at = CASE WHEN c.window_started_at > now() - ${window} THEN c.window_started_at ELSE now() END
    RETURNING hits, (extract(epoch FROM window_started_at + ${window} - now()) * 1000)::int AS ttl_ms`;
}

/** One upsert per request; the database's clock decides the windows, so processes on several hosts agree. */
export class DatabaseCounterStore implements CounterStore {
  constructor(private readonly db: Db) {}

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    const result = await this.db.execute(hitStatement(sql`VALUES (${key}, now(), 1)`, windowMs));
    return windowCount(rowsOf<HitRow>(result)[0]!);
  }

  async prune(windowMs: number): Promise<void> {
    await this.db.execute(
      sql`DELETE FROM rate_limit_counters WHERE window_started_at <= now() - make_interval(secs => ${windowMs / 1000})`,
    );
  }
}
