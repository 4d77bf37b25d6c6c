// Applies control-plane/migrations/NNNN_name.sql in order, each once, each in its own transaction.
import { readdirSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { Db } from './index.js';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'migrations');
// Serialises migrations when several control planes start against one Postgres server.
const MIGRATION_LOCK_KEY = 727_001;

export async function applyMigrations(db: Db): Promise<string[]> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await tx.execute(
      sql`CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = await tx.execute<{ name: string }>(sql`SELECT name FROM schema_migrations`);
    const doneNames = new Set(rowsOf<{ name: string }>(done).map((r) => r.name));
    for (const file of files) {
      if (doneNames.has(file)) continue;
      const text = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
      for (const statement of splitStatements(text)) await tx.execute(sql.raw(statement));
      await tx.execute(sql`INSERT INTO schema_migrations (name) VALUES (${file})`);
      applied.push(file);
    }
  });
  return applied;
}

/** Rows of db.execute(), whose result shape differs between the pglite and node-postgres drivers. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows?: T[] }).rows ?? (result as T[]);
}

/**
 * Statements of a migration file: each ends with ';' at the end of a line (prepared statements take one at a time),
 * except inside a $$-quoted function body, which is kept whole.
 */
export function splitStatements(text: string): string[] {
  const statements: string[] = [];
  let current = '';
  text.split('$$').forEach((part, i) => {
    if (i % 2 === 1) {
      current += `$$${part}$$`;
      return;
    }
    const pieces = part.split(/;[ \t]*(?:--[^\n]*)?$/m);
    current += pieces[0];
    for (const piece of pieces.slice(1)) {
      statements.push(current);
      current = piece;
    }
  });
  statements.push(current);
  return statements.map((s) => s.replace(/^\s*--.*$/gm, '').trim()).filter(Boolean);
}
