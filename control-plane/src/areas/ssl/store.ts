// SQL of the ssl area: the certificates table (migration 0010) and the issuance state of each domain.
import { sql, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';

export interface CertificateRow {
  id: number;
  domainId: number;
  source: 'uploaded' | 'issued';
  hostnames: string[];
  sans: string[];
  /** Leaf then intermediates. */
  certificatePem: string;
  subject: string;
  issuer: string;
  serialNumber: string;
  fingerprint: string;
  keyType: 'rsa' | 'ecdsa';
  keySize: number;
  notBefore: Date;
  notAfter: Date;
  selected: boolean;
  createdAt: Date;
}

/** A row to insert: the key only as KeyVault.seal(...) made it, the table never holds a plain key. */
export type NewCertificate = Omit<CertificateRow, 'id' | 'selected' | 'createdAt'> & { privateKeySealed: string };

interface RawRow {
  id: number;
  domain_id: number;
  source: 'uploaded' | 'issued';
  hostnames: string[] | string;
  sans: string[] | string;
  certificate_pem: string;
  subject: string;
  issuer: string;
  serial_number: string;
  fingerprint_sha256: string;
  key_type: 'rsa' | 'ecdsa';
  key_size: number;
  not_before: Date | string;
  not_after: Date | string;
  selected: boolean;
  created_at: Date | string;
}

/** Every column but the sealed key: what API reads select. */
const COLUMNS = sql.raw(
  'id, domain_id, source, hostnames, sans, certificate_pem, subject, issuer, serial_number, fingerprint_sha256, ' +
    'key_type, key_size, not_before, not_after, selected, created_at',
);

/** text[] arrives as an array (PGlite, node-postgres) or, in json contexts, as a literal. */
function textArray(v: string[] | string): string[] {
  if (Array.isArray(v)) return v;
  const inner = v.replace(/^\{|\}$/g, '');
  return inner === '' ? [] : inner.split(',').map((s) => s.replace(/^"|"$/g, ''));
}

function toRow(r: RawRow): CertificateRow {
  return {
    id: r.id,
    domainId: r.domain_id,
    source: r.source,
    hostnames: textArray(r.hostnames),
    sans: textArray(r.sans),
    certificatePem: r.certificate_pem,
    subject: r.subject,
    issuer: r.issuer,
    serialNumber: r.serial_number,
    fingerprint: r.fingerprint_sha256,
    keyType: r.key_type,
    keySize: r.key_size,
    notBefore: new Date(r.not_before),
    notAfter: new Date(r.not_after),
    selected: r.selected,
    createdAt: new Date(r.created_at),
  };
}

const textArrayParam = (values: readonly string[]): SQL => sql`${`{${values.map((v) => `"${v}"`).join(',')}}`}::text[]`;

/** The domain's certificates, oldest first (no keys). */
export async function listCertificates(db: Db | Tx, domainId: number): Promise<CertificateRow[]> {
  const res = await db.execute(sql`SELECT ${COLUMNS} FROM certificates WHERE domain_id = ${domainId} ORDER BY id`);
  return rowsOf<RawRow>(res).map(toRow);
}

export async function getCertificate(db: Db | Tx, domainId: number, id: number): Promise<CertificateRow | undefined> {
  const res = await db.execute(sql`SELECT ${COLUMNS} FROM certificates WHERE domain_id = ${domainId} AND id = ${id}`);
  const row = rowsOf<RawRow>(res)[0];
  return row ? toRow(row) : undefined;
}

/** Inserts one certificate; a certificate already on the domain (same leaf) is left as it is and undefined returned. */
export async function insertCertificate(tx: Tx, c: NewCertificate): Promise<CertificateRow | undefined> {
  const res = await tx.execute(sql`
    INSERT INTO certificates (domain_id, source, hostnames, sans, certificate_pem, private_key_sealed, subject, issuer,
      serial_number, fingerprint_sha256, key_type, key_size, not_before, not_after)
    VALUES (${c.domainId}, ${c.source}, ${textArrayParam(c.hostnames)}, ${textArrayParam(c.sans)}, ${c.certificatePem},
      ${c.privateKeySealed}, ${c.subject}, ${c.issuer}, ${c.serialNumber}, ${c.fingerprint}, ${c.keyType}, ${c.keySize},
      ${c.notBefore.toISOString()}::timestamptz, ${c.notAfter.toISOString()}::timestamptz)
    ON CONFLICT (domain_id, fingerprint_sha256) DO NOTHING
    RETURNING ${COLUMNS}`);
  const row = rowsOf<RawRow>(res)[0];
  return row ? toRow(row) : undefined;
}

export async function deleteCertificates(tx: Tx, domainId: number, ids: readonly number[]): Promise<number> {
  if (ids.length === 0) return 0;
  const res = await tx.execute(
    sql`DELETE FROM certificates WHERE domain_id = ${domainId} AND id = ANY(${`{${ids.join(',')}}`}::int[]) RETURNING id`,
  );
  return rowsOf<{ id: number }>(res).length;
}

/** Makes `id` the domain's chosen certificate (null: none, the automatic order applies). */
export async function chooseCertificate(tx: Tx, domainId: number, id: number | null): Promise<void> {
  await tx.execute(sql`UPDATE certificates SET selected = false WHERE domain_id = ${domainId} AND selected`);
  if (id !== null)
    await tx.execute(sql`UPDATE certificates SET selected = true WHERE domain_id = ${domainId} AND id = ${id}`);
}

/** The SQL expression snapshot.ts reads the domain's unexpired certificates with (sealed keys included). */
export function snapshotCertificatesSql(domainId: number): SQL {
  return sql`(SELECT coalesce(json_agg(json_build_object('id', id, 'source', source, 'hostnames', hostnames,
      'pem', certificate_pem, 'key', private_key_sealed, 'fingerprint', fingerprint_sha256,
      'not_after_ms', (extract(epoch FROM not_after) * 1000)::float8, 'selected', selected) ORDER BY id), '[]'::json)
    FROM certificates WHERE domain_id = ${domainId} AND not_after > now())`;
}

/** One element of snapshotCertificatesSql's array. */
export interface SnapshotCertificateJson {
  id: number;
  source: 'uploaded' | 'issued';
  hostnames: string[];
  pem: string;
  key: string;
  fingerprint: string;
  not_after_ms: number;
  selected: boolean;
}

/** Per hostname: where its automatic issuance stands (written by the issuance workflows). */
export interface HostnameIssuance {
  attempts: number;
  last_error: string | null;
  next_retry_at: string | null;
}

export interface IssuanceState {
  status: 'idle' | 'pending' | 'failed';
  lastIssueAttemptAt: Date | null;
  nextManualIssueAt: Date | null;
  lastError: string | null;
  hostnames: Record<string, HostnameIssuance>;
}

const IDLE: IssuanceState = {
  status: 'idle',
  lastIssueAttemptAt: null,
  nextManualIssueAt: null,
  lastError: null,
  hostnames: {},
};

interface RawIssuance {
  domain_id: number;
  status: IssuanceState['status'];
  last_issue_attempt_at: Date | string | null;
  next_manual_issue_at: Date | string | null;
  last_error: string | null;
  hostnames: Record<string, HostnameIssuance> | string;
}

const date = (v: Date | string | null): Date | null => (v === null ? null : new Date(v));

function toIssuance(r: RawIssuance): IssuanceState {
  return {
    status: r.status,
    lastIssueAttemptAt: date(r.last_issue_attempt_at),
    nextManualIssueAt: date(r.next_manual_issue_at),
    lastError: r.last_error,
    hostnames: typeof r.hostnames === 'string' ? JSON.parse(r.hostnames) : r.hostnames,
  };
}

/** The domain's issuance state (idle with nothing recorded when no row exists). */
export async function getIssuance(db: Db | Tx, domainId: number): Promise<IssuanceState> {
  return (await getIssuances(db, [domainId])).get(domainId) ?? IDLE;
}

export async function getIssuances(db: Db | Tx, domainIds: readonly number[]): Promise<Map<number, IssuanceState>> {
  const out = new Map<number, IssuanceState>();
  if (domainIds.length === 0) return out;
  const res = await db.execute(
    sql`SELECT * FROM ssl_issuance WHERE domain_id = ANY(${`{${domainIds.join(',')}}`}::int[])`,
  );
  for (const r of rowsOf<RawIssuance>(res)) out.set(r.domain_id, toIssuance(r));
  return out;
}

/** Writes the fields given of the domain's issuance state (the issuance workflows call it through the service). */
export async function setIssuance(db: Db | Tx, domainId: number, patch: Partial<IssuanceState>): Promise<void> {
  const cur = await getIssuance(db, domainId);
  const next = { ...cur, ...patch };
  await db.execute(sql`
    INSERT INTO ssl_issuance (domain_id, status, last_issue_attempt_at, next_manual_issue_at, last_error, hostnames, updated_at)
    VALUES (${domainId}, ${next.status}, ${next.lastIssueAttemptAt?.toISOString() ?? null}::timestamptz,
      ${next.nextManualIssueAt?.toISOString() ?? null}::timestamptz, ${next.lastError},
      ${JSON.stringify(next.hostnames)}::jsonb, now())
    ON CONFLICT (domain_id) DO UPDATE SET status = excluded.status,
      last_issue_attempt_at = excluded.last_issue_attempt_at, next_manual_issue_at = excluded.next_manual_issue_at,
      last_error = excluded.last_error, hostnames = excluded.hostnames, updated_at = now()`);
}

/** Per domain: the expiry of every unexpired certificate and what the serving order needs (domain list summary). */
export async function certificateCandidates(
  db: Db | Tx,
  domainIds: readonly number[],
): Promise<Map<number, Array<Pick<CertificateRow, 'id' | 'source' | 'hostnames' | 'selected' | 'notAfter'>>>> {
  const out = new Map<number, Array<Pick<CertificateRow, 'id' | 'source' | 'hostnames' | 'selected' | 'notAfter'>>>();
  if (domainIds.length === 0) return out;
  const res = await db.execute(sql`SELECT id, domain_id, source, hostnames, selected, not_after FROM certificates
    WHERE domain_id = ANY(${`{${domainIds.join(',')}}`}::int[]) ORDER BY id`);
  for (const r of rowsOf<Pick<RawRow, 'id' | 'domain_id' | 'source' | 'hostnames' | 'selected' | 'not_after'>>(res)) {
    let list = out.get(r.domain_id);
    if (!list) out.set(r.domain_id, (list = []));
    list.push({
      id: r.id,
      source: r.source,
      hostnames: textArray(r.hostnames),
      selected: r.selected,
      notAfter: new Date(r.not_after),
    });
  }
  return out;
}
