// Certificates of a domain: parse, upload, list, choose, delete, store an issued one, and the SSL status. Every write
// goes through changeDomain, so the domain's next config-log entry carries the certificates the edge serves.
import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { ApiError } from '../../errors.js';
import { changeDomain, type DomainRow, type WriteTarget } from '../../config-log/index.js';
import type { ConfigLog } from '../../config-log/index.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import { notifyDomain } from '../notifications/store.js';
import type { KeyVault } from './key-vault.js';
import {
  checkChain,
  checkKeyMatches,
  checkValidity,
  covers,
  coveringName,
  eligibleNames,
  invalid,
  normaliseHostname,
  oneLine,
  parseCertificates,
  parsePrivateKey,
  SSL_LIMITS,
  type ParsedChain,
} from './pem.js';
import { primaryCertificate, servedHostnames, type Candidate } from './serving.js';
import {
  certificateCandidates,
  chooseCertificate as chooseRow,
  deleteCertificates,
  getCertificate,
  getIssuance,
  getIssuances,
  insertCertificate,
  listCertificates,
  setIssuance,
  type CertificateRow,
  type IssuanceState,
  type NewCertificate,
} from './store.js';

const DOMAIN_CHANGED = { domain: true } as const;

/** What a certificate write needs: a WriteTarget whose config log holds the key vault (app, admin context). */
export type SslTarget = WriteTarget & { configLog: ConfigLog };

function vaultOf(target: SslTarget): KeyVault {
  if (!target.configLog.vault) throw new Error('the config log has no certificate key vault (createConfigLog(config))');
  return target.configLog.vault;
}

/** Fully qualified names of the domain's proxied records ("@" → the apex, "*.dev" → "*.dev.<domain>"). */
export async function proxiedHostnames(db: Db | Tx, domain: { id: number; name: string }): Promise<string[]> {
  const res = await db.execute(
    sql`SELECT DISTINCT name FROM dns_records WHERE domain_id = ${domain.id} AND proxied ORDER BY name`,
  );
  return rowsOf<{ name: string }>(res).map((r) => (r.name === '@' ? domain.name : `${r.name}.${domain.name}`));
}

export interface ParsedCertificateInfo {
  subject: string;
  issuer: string;
  serial_number: string;
  fingerprint_sha256: string;
  not_before: string;
  not_after: string;
  sans: string[];
  eligible: string[];
  default_selection: string[];
}

function describe(parsed: ParsedChain) {
  return {
    subject: oneLine(parsed.leaf.subject),
    issuer: oneLine(parsed.leaf.issuer),
    serial_number: parsed.leaf.serialNumber.toLowerCase(),
    fingerprint_sha256: parsed.fingerprint,
    not_before: new Date(parsed.leaf.validFrom).toISOString(),
    not_after: new Date(parsed.leaf.validTo).toISOString(),
  };
}

/**
 * POST ssl/parse: what the certificate says, which of its names belong to this domain (`eligible`), and which of
 * those to pre-select (`default_selection`: the eligible names that cover a proxied hostname, or all eligible names
 * when none does). Nothing is stored; no key, order or validity check (upload does those).
 */
export async function parseForDomain(
  db: Db,
  domain: { id: number; name: string },
  pem: string,
): Promise<ParsedCertificateInfo> {
  const parsed = parseCertificates(pem);
  const eligible = eligibleNames(parsed.sans, domain.name);
  const proxied = await proxiedHostnames(db, domain);
  const eligibleSet = new Set(eligible);
  const usefulSet = new Set(proxied.map((p) => coveringName(eligibleSet, p)));
  const useful = eligible.filter((e) => usefulSet.has(e));
  return {
    ...describe(parsed),
    sans: parsed.sans,
    eligible,
    default_selection: useful.length > 0 ? useful : eligible,
  };
}

export interface UploadInput {
  certificate?: string;
  private_key?: string;
  hostnames?: string[];
}

/** The hostnames asked for, each covered by an eligible name of the certificate (400 naming the first that is not). */
function chosenHostnames(asked: readonly string[], eligible: readonly string[], domain: string): string[] {
  const out: string[] = [];
  for (const raw of asked) {
    const h = normaliseHostname(raw);
    if (!h) throw invalid(`hostnames: "${raw.slice(0, 64)}" is not a host name`);
    if (!eligible.some((e) => covers(e, h)))
      throw invalid(
        `hostname ${h} is not covered by the certificate` +
          (eligible.length > 0
            ? ` (its names in ${domain}: ${eligible.join(', ')})`
            : ` (it names nothing in ${domain})`),
      );
    if (!out.includes(h)) out.push(h);
  }
  return out;
}

/** Everything an upload checks that needs no database: 400 for missing fields, bad PEM, mismatch, expiry, coverage. */
export function prepareUpload(
  vault: KeyVault,
  domain: { id: number; name: string },
  body: UploadInput,
  now: Date,
): NewCertificate {
  const missing = (['certificate', 'private_key', 'hostnames'] as const).filter(
    (f) => body[f] === undefined || body[f] === '' || (f === 'hostnames' && body.hostnames!.length === 0),
  );
  if (missing.length > 0) throw invalid(`missing fields: ${missing.join(', ')}`);
  if (body.hostnames!.length > SSL_LIMITS.hostnames)
    throw invalid(`hostnames: at most ${SSL_LIMITS.hostnames} are accepted`);
  const parsed = parseCertificates(body.certificate!);
  const key = parsePrivateKey(body.private_key!);
  checkKeyMatches(parsed, key);
  checkValidity(parsed, now);
  checkChain(parsed, { complete: true });
  const hostnames = chosenHostnames(body.hostnames!, eligibleNames(parsed.sans, domain.name), domain.name);
  return rowOf(vault, domain.id, 'uploaded', parsed, key, hostnames, body.private_key!);
}

function rowOf(
  vault: KeyVault,
  domainId: number,
  source: 'uploaded' | 'issued',
  parsed: ParsedChain,
  key: { type: 'rsa' | 'ecdsa'; bits: number },
  hostnames: string[],
  privateKeyPem: string,
): NewCertificate {
  const d = describe(parsed);
  return {
    domainId,
    source,
    hostnames,
    sans: parsed.sans,
    certificatePem: parsed.pem,
    privateKeySealed: vault.seal(privateKeyPem, parsed.fingerprint),
    subject: d.subject,
    issuer: d.issuer,
    serialNumber: d.serial_number,
    fingerprint: parsed.fingerprint,
    keyType: key.type,
    keySize: key.bits,
    notBefore: new Date(d.not_before),
    notAfter: new Date(d.not_after),
  };
}

async function insertChecked(tx: Tx, row: DomainRow, cert: NewCertificate): Promise<CertificateRow> {
  const count = rowsOf<{ n: number | string }>(
    await tx.execute(sql`SELECT count(*) AS n FROM certificates WHERE domain_id = ${row.id}`),
  )[0]!;
  if (Number(count.n) >= SSL_LIMITS.certificatesPerDomain)
    throw invalid(
      `a domain holds at most ${SSL_LIMITS.certificatesPerDomain} certificates; delete one before adding another`,
    );
  const inserted = await insertCertificate(tx, cert);
  if (!inserted) throw new ApiError('CP_ERR_CONFLICT', 'this certificate is already on the domain');
  return inserted;
}

/** POST ssl/: upload a custom certificate (plan feature custom_ssl_enabled, checked again under the domain's lock). */
export async function uploadCertificate(
  target: SslTarget,
  domain: DomainRow,
  body: UploadInput,
  now = new Date(),
): Promise<CertificateRow> {
  requireFeature(await effectiveFeatures(target.db, domain.id), 'custom_ssl_enabled');
  const cert = prepareUpload(vaultOf(target), domain, body, now);
  return changeDomain(target, domain.id, async (tx, row) => {
    assertNotFrozen(row);
    requireFeature(await effectiveFeatures(tx, row.id), 'custom_ssl_enabled');
    return { value: await insertChecked(tx, row, cert), change: DOMAIN_CHANGED };
  });
}

export interface IssuedCertificate {
  /** The leaf (PEM); may also hold the chain. */
  certPem: string;
  /** The intermediates in order (PEM), as the ACME server returned them after the leaf; may be empty. */
  chainPem?: string;
  keyPem: string;
  /** Names the edge serves it for; each must be covered by the certificate. Default: its names in the domain. */
  hostnames?: string[];
  /** A label of the issuer (e.g. the ACME directory); informational, the issuer shown is read from the certificate. */
  issuer?: string;
}

/**
 * Stores a certificate issued through ACME for `domain` (by name) and sends it to the edge in the same change:
 * checks key match, order and validity (not completeness: the ACME server's root is trusted by whoever configured
 * it), replaces earlier issued certificates whose hostnames it covers, clears the issuance state of the names it
 * covers, and returns the stored row. For the issuance workflows (issue 11 item 1), through an /internal route.
 */
export async function storeIssuedCertificate(
  target: SslTarget,
  domain: string,
  input: IssuedCertificate,
  now = new Date(),
): Promise<CertificateRow> {
  const parsed = parseCertificates(`${input.certPem.trim()}\n${(input.chainPem ?? '').trim()}\n`);
  const key = parsePrivateKey(input.keyPem);
  checkKeyMatches(parsed, key);
  checkValidity(parsed, now);
  checkChain(parsed, { complete: false });
  return changeDomain(target, { name: domain }, async (tx, row) => {
    const eligible = eligibleNames(parsed.sans, row.name);
    const hostnames = chosenHostnames(input.hostnames ?? eligible, eligible, row.name);
    if (hostnames.length === 0) throw invalid(`the certificate names nothing in ${row.name}`);
    const cert = rowOf(vaultOf(target), row.id, 'issued', parsed, key, hostnames, input.keyPem);
    const superseded = (await listCertificates(tx, row.id)).filter(
      (c) => c.source === 'issued' && c.hostnames.every((h) => hostnames.some((n) => covers(n, h))),
    );
    await deleteCertificates(
      tx,
      row.id,
      superseded.map((c) => c.id),
    );
    const inserted = await insertChecked(tx, row, cert);
    const issuance = await getIssuance(tx, row.id);
    const left = Object.fromEntries(
      Object.entries(issuance.hostnames).filter(([h]) => !hostnames.some((n) => covers(n, h))),
    );
    await setIssuance(tx, row.id, { hostnames: left, status: 'idle', lastError: null });
    await notifyDomain(tx, row.id, {
      category: 'ssl',
      kind: 'ssl.issued',
      title: `A certificate was issued for ${row.name}`,
      body: `It covers ${hostnames.slice(0, 10).join(', ')}${hostnames.length > 10 ? ` and ${hostnames.length - 10} more` : ''} until ${inserted.notAfter.toISOString()}.`,
      domain: row.name,
      data: { certificate_id: inserted.id, hostnames: hostnames.slice(0, 10) },
    });
    return { value: inserted, change: DOMAIN_CHANGED };
  });
}

/**
 * At start: creates the certificate key file if needed (DATA_DIR/certificate-key, like the node token). After a
 * node-token change, keys in the entries nodes hold no longer open (they are sealed under the old token):
 * appends a fresh entry for every domain with certificates, sealed under the current token, and records the token's
 * id. Nothing to do when the id is the recorded one. Returns how many domains got a new entry.
 */
export async function resealForNodeToken(target: SslTarget): Promise<number> {
  if (!target.configLog.vault) return 0;
  target.configLog.vault.ensureSecrets();
  const id = target.configLog.vault.nodeTokenId();
  const recorded = rowsOf<{ node_token_id: string }>(
    await target.db.execute(sql`SELECT node_token_id FROM certificate_seal`),
  )[0];
  if (recorded?.node_token_id === id) return 0;
  const ids = rowsOf<{ domain_id: number }>(
    await target.db.execute(sql`SELECT DISTINCT domain_id FROM certificates ORDER BY domain_id`),
  ).map((r) => r.domain_id);
  for (const domainId of ids) {
    await changeDomain(target, domainId, async () => ({ value: undefined, change: DOMAIN_CHANGED })).catch((err) => {
      // Deleted meanwhile: nothing to reseal.
      if ((err as ApiError).statusCode !== 404) throw err;
    });
  }
  await target.db.execute(sql`INSERT INTO certificate_seal (id, node_token_id) VALUES (true, ${id})
    ON CONFLICT (id) DO UPDATE SET node_token_id = excluded.node_token_id, updated_at = now()`);
  return ids.length;
}

/** Writes where a domain's issuance stands (the issuance workflows). Not a change of what nodes serve. */
export async function recordIssuance(db: Db | Tx, domainId: number, patch: Partial<IssuanceState>): Promise<void> {
  await setIssuance(db, domainId, patch);
}

function candidatesOf(
  rows: ReadonlyArray<Pick<CertificateRow, 'id' | 'source' | 'hostnames' | 'selected' | 'notAfter'>>,
) {
  return rows.map((c): Candidate & { notAfter: Date } => ({
    id: c.id,
    source: c.source,
    hostnames: c.hostnames,
    selected: c.selected,
    notAfterMs: c.notAfter.getTime(),
    notAfter: c.notAfter,
  }));
}

export interface CertificateListing {
  rows: CertificateRow[];
  /** id → hostnames it serves now. */
  served: Map<number, string[]>;
}

export async function listForDomain(db: Db, domainId: number, now = new Date()): Promise<CertificateListing> {
  const rows = await listCertificates(db, domainId);
  return { rows, served: servedHostnames(candidatesOf(rows), now.getTime()) };
}

export async function getForDomain(
  db: Db | Tx,
  domainId: number,
  id: number,
  now = new Date(),
): Promise<{ row: CertificateRow; served: string[] }> {
  const rows = await listCertificates(db, domainId);
  const row = rows.find((r) => r.id === id);
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', 'certificate not found');
  return { row, served: servedHostnames(candidatesOf(rows), now.getTime()).get(id) ?? [] };
}

/** Chooses the certificate the edge serves first (it wins every hostname it covers). */
export async function chooseCertificate(
  target: SslTarget,
  domain: DomainRow,
  id: number,
  now = new Date(),
): Promise<{ row: CertificateRow; served: string[] }> {
  return changeDomain(target, domain.id, async (tx, row) => {
    assertNotFrozen(row);
    const cert = await getCertificate(tx, row.id, id);
    if (!cert) throw new ApiError('CP_ERR_NOT_FOUND', 'certificate not found');
    if (cert.notAfter.getTime() <= now.getTime())
      throw invalid(`certificate ${id} expired on ${cert.notAfter.toISOString()}; it cannot be served`);
    if (cert.selected) return { value: await getForDomain(tx, row.id, id, now) };
    await chooseRow(tx, row.id, id);
    return { value: await getForDomain(tx, row.id, id, now), change: DOMAIN_CHANGED };
  });
}

/** Withdraws the choice of certificate `id`: the automatic order applies again. 404 unless it is the chosen one. */
export async function unchooseCertificate(target: SslTarget, domain: DomainRow, id: number): Promise<void> {
  await changeDomain(target, domain.id, async (tx, row) => {
    const cert = await getCertificate(tx, row.id, id);
    if (!cert) throw new ApiError('CP_ERR_NOT_FOUND', 'certificate not found');
    if (!cert.selected) throw new ApiError('CP_ERR_NOT_FOUND', `certificate ${id} is not the chosen certificate`);
    await chooseRow(tx, row.id, null);
    return { value: undefined, change: DOMAIN_CHANGED };
  });
}

/** Deletes an uploaded certificate; issued ones are renewed and replaced by the issuer, not deleted by hand. */
export async function deleteCertificate(target: SslTarget, domain: DomainRow, id: number): Promise<void> {
  await changeDomain(target, domain.id, async (tx, row) => {
    const cert = await getCertificate(tx, row.id, id);
    if (!cert) throw new ApiError('CP_ERR_NOT_FOUND', 'certificate not found');
    if (cert.source !== 'uploaded')
      throw invalid('only uploaded certificates can be deleted; issued certificates are renewed automatically');
    await deleteCertificates(tx, row.id, [id]);
    return { value: undefined, change: DOMAIN_CHANGED };
  });
}

export interface SslSummaryValue {
  status: 'active' | 'pending' | 'failed' | 'missing';
  expires_at: string | null;
}

function summaryOf(
  candidates: ReturnType<typeof candidatesOf>,
  issuance: IssuanceState | undefined,
  now: Date,
): { summary: SslSummaryValue; primary: ReturnType<typeof candidatesOf>[number] | undefined } {
  const primary = primaryCertificate(candidates, now.getTime());
  if (primary) return { summary: { status: 'active', expires_at: primary.notAfter.toISOString() }, primary };
  const status = issuance?.status === 'pending' ? 'pending' : issuance?.status === 'failed' ? 'failed' : 'missing';
  return { summary: { status, expires_at: null }, primary };
}

/** The SSL summary of each domain (domain list): the same rule as GET ssl/, two queries for any number of domains. */
export async function sslSummaries(db: Db, domainIds: readonly number[], now = new Date()) {
  const [certs, issuances] = await Promise.all([certificateCandidates(db, domainIds), getIssuances(db, domainIds)]);
  const out = new Map<number, SslSummaryValue>();
  for (const id of domainIds) out.set(id, summaryOf(candidatesOf(certs.get(id) ?? []), issuances.get(id), now).summary);
  return out;
}

/** The most coverage entries GET ssl/ lists (a zone may hold thousands of proxied names). */
export const COVERAGE_MAX = 1000;

export interface SslStatus {
  summary: SslSummaryValue;
  primary: CertificateRow | undefined;
  served: string[];
  issuance: IssuanceState;
  canManualIssue: boolean;
  /** Proxied hostnames no served certificate covers, at most COVERAGE_MAX. */
  uncovered: string[];
  uncoveredTotal: number;
}

/** GET ssl/: the served certificate, the issuance state and the proxied hostnames not covered yet. */
export async function sslStatus(db: Db, domain: DomainRow, now = new Date()): Promise<SslStatus> {
  const [rows, issuance, proxied] = await Promise.all([
    listCertificates(db, domain.id),
    getIssuance(db, domain.id),
    proxiedHostnames(db, domain),
  ]);
  const candidates = candidatesOf(rows);
  const { summary, primary } = summaryOf(candidates, issuance, now);
  const served = servedHostnames(candidates, now.getTime());
  const servedNames = new Set([...served.values()].flat());
  const uncoveredAll = proxied.filter((p) => coveringName(servedNames, p) === undefined);
  const cooled = !issuance.nextManualIssueAt || issuance.nextManualIssueAt.getTime() <= now.getTime();
  return {
    summary,
    primary: primary ? rows.find((r) => r.id === primary.id) : undefined,
    served: primary ? (served.get(primary.id) ?? []) : [],
    issuance,
    canManualIssue:
      (summary.status === 'missing' || summary.status === 'failed') &&
      domain.dnsMode !== 'external' &&
      issuance.status !== 'pending' &&
      cooled,
    uncovered: uncoveredAll.slice(0, COVERAGE_MAX),
    uncoveredTotal: uncoveredAll.length,
  };
}
