// SQL of the acme-dns account of a domain (migration 0013): the password only as KeyVault.seal(...) made it.
import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';

export interface AcmeDnsAccountRow {
  domainId: number;
  serverUrl: string;
  username: string;
  passwordSealed: string;
  subdomain: string;
  fulldomain: string | null;
  lastTestAt: Date | null;
  lastTestOk: boolean | null;
  lastTestError: string | null;
  updatedAt: Date;
}

interface RawRow {
  domain_id: number;
  server_url: string;
  username: string;
  password_sealed: string;
  subdomain: string;
  fulldomain: string | null;
  last_test_at: Date | string | null;
  last_test_ok: boolean | null;
  last_test_error: string | null;
  updated_at: Date | string;
}

function toRow(r: RawRow): AcmeDnsAccountRow {
  return {
    domainId: r.domain_id,
    serverUrl: r.server_url,
    username: r.username,
    passwordSealed: r.password_sealed,
    subdomain: r.subdomain,
    fulldomain: r.fulldomain,
    lastTestAt: r.last_test_at === null ? null : new Date(r.last_test_at),
    lastTestOk: r.last_test_ok,
    lastTestError: r.last_test_error,
    updatedAt: new Date(r.updated_at),
  };
}

export async function getAcmeDnsAccount(db: Db | Tx, domainId: number): Promise<AcmeDnsAccountRow | undefined> {
  const res = await db.execute(sql`SELECT * FROM acme_dns_accounts WHERE domain_id = ${domainId}`);
  const row = rowsOf<RawRow>(res)[0];
  return row ? toRow(row) : undefined;
}

export type AcmeDnsAccountWrite = Pick<
  AcmeDnsAccountRow,
  'domainId' | 'serverUrl' | 'username' | 'passwordSealed' | 'subdomain' | 'fulldomain'
>;

/** Creates or replaces the account; a replaced account's last test result no longer applies. */
export async function putAcmeDnsAccount(db: Db | Tx, a: AcmeDnsAccountWrite): Promise<AcmeDnsAccountRow> {
  const res = await db.execute(sql`
    INSERT INTO acme_dns_accounts (domain_id, server_url, username, password_sealed, subdomain, fulldomain)
    VALUES (${a.domainId}, ${a.serverUrl}, ${a.username}, ${a.passwordSealed}, ${a.subdomain}, ${a.fulldomain})
    ON CONFLICT (domain_id) DO UPDATE SET server_url = EXCLUDED.server_url, username = EXCLUDED.username,
      password_sealed = EXCLUDED.password_sealed, subdomain = EXCLUDED.subdomain, fulldomain = EXCLUDED.fulldomain,
      last_test_ok = NULL, last_test_error = NULL, updated_at = now()
    RETURNING *`);
  return toRow(rowsOf<RawRow>(res)[0]!);
}

export async function deleteAcmeDnsAccount(db: Db | Tx, domainId: number): Promise<boolean> {
  const res = await db.execute(sql`DELETE FROM acme_dns_accounts WHERE domain_id = ${domainId} RETURNING domain_id`);
  return rowsOf(res).length > 0;
}

/**
 * Claims the domain's test slot: the account as it is now when the last test is older than `intervalMs` (or there was
 * none), else the milliseconds to wait. undefined when the domain has no account.
 */
export async function claimAcmeDnsTest(
  db: Db,
  domainId: number,
  intervalMs: number,
): Promise<{ account: AcmeDnsAccountRow } | { waitMs: number } | undefined> {
  const res = await db.execute(sql`
    UPDATE acme_dns_accounts SET last_test_at = now()
    WHERE domain_id = ${domainId}
      AND (last_test_at IS NULL OR last_test_at <= now() - (${intervalMs}::bigint * interval '1 millisecond'))
    RETURNING *`);
  const row = rowsOf<RawRow>(res)[0];
  if (row) return { account: toRow(row) };
  const current = await getAcmeDnsAccount(db, domainId);
  if (!current) return undefined;
  const last = current.lastTestAt?.getTime() ?? Date.now();
  return { waitMs: Math.max(1000, last + intervalMs - Date.now()) };
}

/** Records a test's outcome, unless the account was replaced meanwhile (another password). */
export async function recordAcmeDnsTest(
  db: Db,
  domainId: number,
  passwordSealed: string,
  ok: boolean,
  error: string | null,
): Promise<void> {
  await db.execute(sql`
    UPDATE acme_dns_accounts SET last_test_ok = ${ok}, last_test_error = ${error}
    WHERE domain_id = ${domainId} AND password_sealed = ${passwordSealed}`);
}
