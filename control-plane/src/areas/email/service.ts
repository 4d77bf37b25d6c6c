// Email routing logic: enable/disable with the managed DNS records (through changeDomain), lock/unlock, check,
// settings, catch-all, custom addresses, destinations and their emailed verification links, counts and the activity
// log, sending; and what the mail node asks (internal routes): a recipient's route, the DKIM key, the daily limits.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import { AddressPolicy } from '@platform/shared/address-policy';
import { ensureSecret } from '@platform/shared/node-token';
import { deliver, mailResolver, type DeliveryContext } from '@platform/mail-node/deliver';
import type { NodeActivity, RecipientRoute } from '@platform/mail-node/contract';
import type { Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { ApiError } from '../../errors.js';
import { changeDomain, type DomainLock, type DomainRow } from '../../config-log/index.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { customAddress, emailAddress } from './addresses.js';
import { dkimKeyForNodes, dkimRecordValue, newDkimKey, openDkimKey, vaultOf } from './keys.js';
import {
  activityCounts,
  activityOf,
  addActivity,
  addressById,
  addressesOf,
  countAddresses,
  countDestinations,
  destinationByEmail,
  destinationsOf,
  giveBackDaily,
  insertDestination,
  insertRouting,
  routingOf,
  takeDaily,
  todayCounts,
  updateRouting,
  type DestinationRow,
  type RoutingRow,
} from './store.js';
import { presentActivity, presentAddress, presentDestination, presentRouting } from './present.js';
import { coveringName } from '../ssl/pem.js';
import { certificatesForNodes } from '../ssl/serving.js';
import { snapshotCertificatesSql, type SnapshotCertificateJson } from '../ssl/store.js';
import { enclosingNames } from '../domains/domain-name.js';
import type { EmailConfig } from './config.js';

export const NOT_ENABLED = 'email routing is not enabled for this domain';
export const ADDRESS_NOT_FOUND = 'address not found';
export const DESTINATION_NOT_FOUND = 'destination not found';
/** Destination addresses one account may hold. */
export const MAX_DESTINATIONS = 200;
/** A verification mail is sent again at most once a minute per destination. */
export const RESEND_INTERVAL_MS = 60_000;
/** Bodies of POST send: at most this many characters of text. */
export const MAX_SEND_TEXT = 64 * 1024;

export const emailConfig = (app: FastifyInstance): EmailConfig =>
  (app.config as unknown as { email: EmailConfig }).email;

function bad(message: string): never {
  throw new ApiError('CP_ERR_INVALID_INPUT', message);
}

// ---- Managed DNS records ----

export interface ManagedRecord {
  name: string;
  type: 'MX' | 'TXT';
  destination: string;
  mx_priority?: number;
}

/** The records enable publishes (MX, SPF, DKIM) and the DMARC record suggested (not published). */
export function managedRecords(cfg: EmailConfig, routing: Pick<RoutingRow, 'dkim_selector' | 'dkim_public_key'>) {
  const published: ManagedRecord[] = [
    ...cfg.mxHosts.map((h, i) => ({ name: '@', type: 'MX' as const, destination: h, mx_priority: 10 * (i + 1) })),
    { name: '@', type: 'TXT', destination: `v=spf1 include:${cfg.spfInclude} ~all` },
    { name: `${routing.dkim_selector}._domainkey`, type: 'TXT', destination: dkimRecordValue(routing.dkim_public_key) },
  ];
  const suggested: ManagedRecord[] = [{ name: '_dmarc', type: 'TXT', destination: 'v=DMARC1; p=none' }];
  return { published, suggested };
}

async function requireRouting(app: FastifyInstance | { db: Tx }, domainId: number): Promise<RoutingRow> {
  const row = await routingOf(app.db, domainId);
  if (!row) throw new ApiError('CP_ERR_WRONG_STATE', NOT_ENABLED);
  return row;
}

export async function status(app: FastifyInstance, domain: DomainRow) {
  const routing = await routingOf(app.db, domain.id);
  if (!routing)
    return {
      enabled: false,
      records_locked: false,
      dkim_selector: null,
      records: [],
      suggested_records: [],
      last_check: null,
    };
  const { published, suggested } = managedRecords(emailConfig(app), routing);
  return { ...presentRouting(routing), records: published, suggested_records: suggested };
}

/**
 * Enable: the DKIM key is made on first enable (before the transaction: key generation takes a while), then, under
 * the domain's lock, the routing row is switched on and for a managed zone the MX, SPF and DKIM records are written
 * and named in ONE config-log entry. An apex MX or SPF record the platform does not manage is a conflict (409):
 * mail cannot go to two places.
 */
export async function enable(app: FastifyInstance, lock: DomainLock, domainId: number, domainName: string) {
  requireFeature(await effectiveFeatures(app.db, domainId), 'email_routing_enabled');
  const key = (await routingOf(app.db, domainId)) ? undefined : await newDkimKey(app, domainName);
  const cfg = emailConfig(app);
  return changeDomain(app, lock, async (tx, domain) => {
    if (key) await insertRouting(tx, domain.id, key);
    const routing = (await routingOf(tx, domain.id))!;
    let ids = routing.managed_record_ids ?? [];
    if (domain.dnsMode === 'managed' && ids.length === 0) {
      const conflicting = rowsOf<{ type: string }>(
        await tx.execute(sql`SELECT type FROM dns_records WHERE domain_id = ${domain.id} AND name = '@'
          AND (type = 'MX' OR (type = 'TXT' AND destination LIKE 'v=spf1%')) LIMIT 1`),
      );
      if (conflicting.length > 0)
        throw new ApiError(
          'CP_ERR_CONFLICT',
          `the zone already has ${conflicting[0]!.type === 'MX' ? 'an MX' : 'an SPF'} record at the apex; delete it, then enable email routing`,
        );
      ids = [];
      for (const r of managedRecords(cfg, routing).published) {
        const [row] = rowsOf<{ id: number }>(
          await tx.execute(sql`INSERT INTO dns_records (domain_id, name, type, destination, mx_priority, ttl, comment)
            VALUES (${domain.id}, ${r.name}, ${r.type}, ${r.destination}, ${r.mx_priority ?? null}, 3600,
              'managed by email routing') RETURNING id`),
        );
        ids.push(row!.id);
      }
    }
    const updated = await updateRouting(
      tx,
      domain.id,
      sql`enabled = true, records_locked = true, managed_record_ids = ${`{${ids.join(',')}}`}::integer[]`,
    );
    const fresh = ids.filter((id) => !(routing.managed_record_ids ?? []).includes(id));
    const { published, suggested } = managedRecords(cfg, updated);
    return {
      value: { ...presentRouting(updated), records: published, suggested_records: suggested },
      change: fresh.length > 0 ? { upsertedRecords: fresh } : {},
    };
  });
}

/** Disable: the routing row is switched off and the managed records removed, in one config-log entry. */
export async function disable(app: FastifyInstance, lock: DomainLock) {
  const cfg = emailConfig(app);
  return changeDomain(app, lock, async (tx, domain) => {
    const routing = await requireRouting({ db: tx }, domain.id);
    const ids = routing.managed_record_ids ?? [];
    if (ids.length > 0)
      await tx.execute(
        sql`DELETE FROM dns_records WHERE domain_id = ${domain.id} AND id = ANY(${`{${ids.join(',')}}`}::integer[])`,
      );
    const updated = await updateRouting(tx, domain.id, sql`enabled = false, managed_record_ids = '{}'`);
    return {
      value: { ...presentRouting(updated), records: [], suggested_records: managedRecords(cfg, updated).suggested },
      change: ids.length > 0 ? { removedRecords: ids } : {},
    };
  });
}

export async function setLocked(app: FastifyInstance, lock: DomainLock, locked: boolean) {
  return changeDomain(app, lock, async (tx, domain) => {
    await requireRouting({ db: tx }, domain.id);
    const updated = await updateRouting(tx, domain.id, sql`records_locked = ${locked}`);
    return { value: presentRouting(updated) };
  });
}

/** The managed records of email routing that are locked (the records API refuses to change or delete them). */
export async function lockedEmailRecords(tx: Tx, domainId: number): Promise<Set<number>> {
  const rows = rowsOf<{ id: number }>(
    await tx.execute(sql`SELECT unnest(managed_record_ids) AS id FROM email_routing
      WHERE domain_id = ${domainId} AND records_locked`),
  );
  return new Set(rows.map((r) => Number(r.id)));
}

export function lockedRecordError(id: number): ApiError {
  return new ApiError(
    'CP_ERR_CONFLICT',
    `record ${id} is managed by email routing and locked; unlock it with POST /domains/{domain}/email/unlock first`,
  );
}

/** 409 when one of `recordIds` is a locked managed record of email routing. */
export async function assertRecordsUnlocked(tx: Tx, domainId: number, recordIds: readonly number[]): Promise<void> {
  if (recordIds.length === 0) return;
  const locked = await lockedEmailRecords(tx, domainId);
  const hit = recordIds.find((id) => locked.has(id));
  if (hit !== undefined) throw lockedRecordError(hit);
}

/** Check: the published records against what they should be (our zone for a managed domain, DNS for an external one). */
export async function check(app: FastifyInstance, domain: DomainRow) {
  const routing = await requireRouting(app, domain.id);
  const cfg = emailConfig(app);
  const { published } = managedRecords(cfg, routing);
  const results: Array<ManagedRecord & { ok: boolean; found: string[] }> = [];
  if (domain.dnsMode === 'managed') {
    const stored = rowsOf<{ name: string; type: string; destination: string; mx_priority: number | null }>(
      await app.db.execute(sql`SELECT name, type, destination, mx_priority FROM dns_records
        WHERE domain_id = ${domain.id} AND type IN ('MX', 'TXT')`),
    );
    for (const r of published) {
      const found = stored.filter((s) => s.name === r.name && s.type === r.type).map((s) => s.destination);
      results.push({ ...r, found: found.slice(0, 16), ok: found.includes(r.destination) });
    }
  } else {
    const resolver = mailResolver(cfg.resolvers, 3000);
    for (const r of published) {
      const fqdn = r.name === '@' ? domain.name : `${r.name}.${domain.name}`;
      let found: string[] = [];
      try {
        found =
          r.type === 'MX'
            ? (await resolver.resolveMx(fqdn)).map((m) => m.exchange.replace(/\.$/, '').toLowerCase())
            : (await resolver.resolveTxt(fqdn)).map((parts) => parts.join(''));
      } catch {
        found = [];
      }
      results.push({ ...r, found: found.slice(0, 16), ok: found.includes(r.destination) });
    }
  }
  const outcome = { ok: results.every((r) => r.ok), checked_at: new Date().toISOString(), records: results };
  await updateRouting(app.db as never, domain.id, sql`last_check = ${JSON.stringify(outcome)}::jsonb`);
  return outcome;
}

export async function updateSettings(
  app: FastifyInstance,
  lock: DomainLock,
  body: { dmarc_policy?: 'honor' | 'ignore' },
) {
  return changeDomain(app, lock, async (tx, domain) => {
    const routing = await requireRouting({ db: tx }, domain.id);
    const settings = { ...routing.settings, ...(body.dmarc_policy ? { dmarc_policy: body.dmarc_policy } : {}) };
    const updated = await updateRouting(tx, domain.id, sql`settings = ${JSON.stringify(settings)}::jsonb`);
    return { value: presentRouting(updated) };
  });
}

// ---- Catch-all and addresses ----

export async function getCatchAll(app: FastifyInstance, domainId: number) {
  const r = await requireRouting(app, domainId);
  return { enabled: r.catch_all_enabled, action: r.catch_all_action, destination: r.catch_all_destination || null };
}

/** A destination of a custom address must be one of the domain owner's destinations; new ones are added (and mailed). */
async function ownerDestination(
  tx: Tx,
  ownerId: number,
  raw: string,
): Promise<{ row: DestinationRow; added: boolean }> {
  const a = emailAddress(raw);
  if (!a.ok) bad(`destination: ${a.error}`);
  const existing = await destinationByEmail(tx, ownerId, a.value.address);
  if (existing) return { row: existing, added: false };
  if ((await countDestinations(tx, ownerId)) >= MAX_DESTINATIONS)
    bad(`an account may hold at most ${MAX_DESTINATIONS} destination addresses`);
  return { row: await insertDestination(tx, ownerId, a.value.address), added: true };
}

export async function putCatchAll(
  app: FastifyInstance,
  lock: DomainLock,
  body: { enabled: boolean; action: 'drop' | 'forward'; destination?: string | null | undefined },
) {
  const added: DestinationRow[] = [];
  const value = await changeDomain(app, lock, async (tx, domain) => {
    await requireRouting({ db: tx }, domain.id);
    let destination = '';
    if (body.action === 'forward') {
      if (!body.destination) bad('destination is required when the action is forward');
      const d = await ownerDestination(tx, domain.ownerId, body.destination);
      if (d.added) added.push(d.row);
      destination = d.row.email;
    }
    const r = await updateRouting(
      tx,
      domain.id,
      sql`catch_all_enabled = ${body.enabled}, catch_all_action = ${body.action}, catch_all_destination = ${destination}`,
    );
    return {
      value: { enabled: r.catch_all_enabled, action: r.catch_all_action, destination: r.catch_all_destination || null },
    };
  });
  for (const d of added) await sendVerification(app, d).catch(() => undefined);
  return value;
}

export async function listAddresses(app: FastifyInstance, domain: DomainRow) {
  const rows = await addressesOf(app.db, domain.id);
  const verified = new Set(
    (await destinationsOf(app.db, domain.ownerId)).filter((d) => d.verified_at).map((d) => d.email),
  );
  const features = await effectiveFeatures(app.db, domain.id);
  return {
    addresses: rows.map((r) => presentAddress(r, domain.name, verified.has(r.destination))),
    max_email_rules: features.max_email_rules,
  };
}

export async function createAddress(
  app: FastifyInstance,
  lock: DomainLock,
  body: { address: string; destination: string; enabled?: boolean | undefined },
) {
  const added: DestinationRow[] = [];
  const value = await changeDomain(app, lock, async (tx, domain) => {
    await requireRouting({ db: tx }, domain.id);
    const local = customAddress(body.address, domain.name);
    if (!local.ok) bad(`address: ${local.error}`);
    const features = await effectiveFeatures(tx, domain.id);
    requireFeature(features, 'email_routing_enabled');
    const n = await countAddresses(tx, domain.id);
    if (n >= features.max_email_rules)
      throw new ApiError(
        'CP_ERR_PLAN_LIMIT',
        `address limit reached: your plan (${features.plan}) allows at most ${features.max_email_rules} addresses (max_email_rules)`,
        { feature: 'max_email_rules' },
      );
    const d = await ownerDestination(tx, domain.ownerId, body.destination);
    if (d.added) added.push(d.row);
    const [row] = rowsOf<Parameters<typeof presentAddress>[0]>(
      await tx.execute(sql`INSERT INTO email_addresses (domain_id, local_part, destination, enabled)
        VALUES (${domain.id}, ${local.value}, ${d.row.email}, ${body.enabled ?? true})
        ON CONFLICT (domain_id, local_part) DO NOTHING RETURNING *`),
    );
    if (!row) throw new ApiError('CP_ERR_CONFLICT', `${local.value}@${domain.name} already exists`);
    return { value: presentAddress(row, domain.name, d.row.verified_at !== null) };
  });
  for (const d of added) await sendVerification(app, d).catch(() => undefined);
  return value;
}

export async function updateAddress(
  app: FastifyInstance,
  lock: DomainLock,
  id: number,
  body: { address?: string | undefined; destination?: string | undefined; enabled?: boolean | undefined },
) {
  const added: DestinationRow[] = [];
  const value = await changeDomain(app, lock, async (tx, domain) => {
    const stored = await addressById(tx, domain.id, id);
    if (!stored) throw new ApiError('CP_ERR_NOT_FOUND', ADDRESS_NOT_FOUND);
    let local = stored.local_part;
    if (body.address !== undefined) {
      const l = customAddress(body.address, domain.name);
      if (!l.ok) bad(`address: ${l.error}`);
      local = l.value;
    }
    let destination = stored.destination;
    let verified: boolean | undefined;
    if (body.destination !== undefined) {
      const d = await ownerDestination(tx, domain.ownerId, body.destination);
      if (d.added) added.push(d.row);
      destination = d.row.email;
      verified = d.row.verified_at !== null;
    }
    const [row] = rowsOf<Parameters<typeof presentAddress>[0]>(
      await tx.execute(sql`UPDATE email_addresses SET local_part = ${local}, destination = ${destination},
        enabled = ${body.enabled ?? stored.enabled}, updated_at = now()
        WHERE id = ${id} AND NOT EXISTS (SELECT 1 FROM email_addresses o WHERE o.domain_id = ${domain.id}
          AND o.local_part = ${local} AND o.id <> ${id}) RETURNING *`),
    );
    if (!row) throw new ApiError('CP_ERR_CONFLICT', `${local}@${domain.name} already exists`);
    verified ??= (await destinationByEmail(tx, domain.ownerId, destination))?.verified_at != null;
    return { value: presentAddress(row, domain.name, verified) };
  });
  for (const d of added) await sendVerification(app, d).catch(() => undefined);
  return value;
}

export async function deleteAddress(app: FastifyInstance, lock: DomainLock, id: number) {
  return changeDomain(app, lock, async (tx, domain) => {
    const gone = rowsOf(
      await tx.execute(sql`DELETE FROM email_addresses WHERE domain_id = ${domain.id} AND id = ${id} RETURNING id`),
    );
    if (gone.length === 0) throw new ApiError('CP_ERR_NOT_FOUND', ADDRESS_NOT_FOUND);
    return { value: { message: `address ${id} deleted` } };
  });
}

export async function setAddressEnabled(app: FastifyInstance, lock: DomainLock, id: number, enabled: boolean) {
  return updateAddress(app, lock, id, { enabled });
}

// ---- Counts and activity ----

export async function counts(app: FastifyInstance, domain: DomainRow) {
  const features = await effectiveFeatures(app.db, domain.id);
  const today = await todayCounts(app.db, domain.id);
  const last24h = await activityCounts(app.db, domain.id, Date.now() - 86_400_000);
  return {
    last_24h: {
      forwarded: last24h.forwarded ?? 0,
      refused: last24h.refused ?? 0,
      deferred: last24h.deferred ?? 0,
      bounced: last24h.bounced ?? 0,
      dropped: last24h.dropped ?? 0,
      sent: last24h.sent ?? 0,
    },
    today: {
      forwards: today.forwards,
      max_email_forwards_per_day: features.max_email_forwards_per_day,
      sends: today.sends,
      max_email_sends_per_day: features.max_email_sends_per_day,
    },
  };
}

export async function activity(
  app: FastifyInstance,
  domainId: number,
  q: { limit?: number | undefined; before?: number | undefined },
  direction: 'in' | 'out',
) {
  const rows = await activityOf(app.db, domainId, { direction, limit: q.limit ?? 50, before: q.before });
  return { entries: rows.map(presentActivity) };
}

// ---- Destinations and verification ----

function linkKey(app: FastifyInstance): string {
  return ensureSecret(app.config.dataDir, 'email-link-key');
}

/** `<id>.<expiry seconds>.<nonce>.<hmac>`: signed (HMAC-SHA256), single use (the nonce's hash is stored, then cleared). */
function newToken(app: FastifyInstance, id: number, expiresAt: number): { token: string; nonceHash: string } {
  const nonce = randomBytes(24).toString('base64url');
  const body = `${id}.${Math.floor(expiresAt / 1000)}.${nonce}`;
  const mac = createHmac('sha256', linkKey(app)).update(body).digest('base64url');
  return { token: `${body}.${mac}`, nonceHash: createHash('sha256').update(nonce).digest('hex') };
}

const deliveryContexts = new WeakMap<FastifyInstance, DeliveryContext>();
export function deliveryContext(app: FastifyInstance): DeliveryContext {
  let ctx = deliveryContexts.get(app);
  if (!ctx) {
    const cfg = emailConfig(app);
    ctx = {
      resolver: mailResolver(cfg.resolvers),
      policy: new AddressPolicy(app.config.allowedPrivateNetworks, [
        { address: app.config.apiHost, port: app.config.apiPort },
      ]),
      port: cfg.deliveryPort,
      ehloName: cfg.ehloName,
      timeoutMs: 20_000,
    };
    deliveryContexts.set(app, ctx);
  }
  return ctx;
}

function plainMessage(from: string, to: string, subject: string, text: string, headers: Record<string, string> = {}) {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const id = `<${randomBytes(12).toString('hex')}@${from.slice(from.lastIndexOf('@') + 1)}>`;
  return Buffer.from(
    `From: ${from}\r\nTo: ${to}\r\nSubject: ${subject}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: ${id}\r\n` +
      `MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n${extra}\r\n` +
      `${text.replace(/\r?\n/g, '\r\n')}\r\n`,
  );
}

/**
 * Makes a new single-use link for the destination and mails it in the background (a destination's MX may take its
 * time; the request does not wait for it). A failed delivery is logged; resend asks again.
 */
export async function sendVerification(app: FastifyInstance, dest: DestinationRow): Promise<void> {
  const cfg = emailConfig(app);
  const expiresAt = Date.now() + cfg.verifyLinkSeconds * 1000;
  const { token, nonceHash } = newToken(app, dest.id, expiresAt);
  await app.db.execute(sql`UPDATE email_destinations SET token_hash = ${nonceHash},
    token_expires_at = ${new Date(expiresAt).toISOString()}::timestamptz, sent_at = now() WHERE id = ${dest.id}`);
  const link = `${app.config.publicBaseUrl}/email/destinations/verify?token=${token}`;
  const text =
    `Someone asked to forward email to ${dest.email}.\n\nTo allow it, verify this address:\n\n` +
    `  curl -X POST -H 'Content-Type: application/json' -d '{"token":"${token}"}' ${app.config.publicBaseUrl}/email/destinations/verify\n\n` +
    `(the link: ${link})\n\nThe link works once and expires in ${Math.round(cfg.verifyLinkSeconds / 3600)} hours. ` +
    `If you did not ask for this, ignore this message.\n`;
  deliver(deliveryContext(app), {
    from: cfg.systemFrom,
    to: dest.email,
    raw: plainMessage(cfg.systemFrom, dest.email, 'Verify your email routing destination', text, {
      'X-Email-Routing-Verify': token,
    }),
  }).then(
    (r) => {
      if (!r.ok) app.log.warn({ destination: dest.id, response: r.response }, 'verification mail not delivered');
    },
    (err: unknown) => app.log.warn({ err, destination: dest.id }, 'verification mail not delivered'),
  );
}

export async function listDestinations(app: FastifyInstance, userId: number) {
  return { destinations: (await destinationsOf(app.db, userId)).map(presentDestination) };
}

export async function addDestination(app: FastifyInstance, userId: number, email: string) {
  const a = emailAddress(email);
  if (!a.ok) bad(`email: ${a.error}`);
  const existing = await destinationByEmail(app.db, userId, a.value.address);
  if (existing) return presentDestination(existing);
  if ((await countDestinations(app.db, userId)) >= MAX_DESTINATIONS)
    bad(`an account may hold at most ${MAX_DESTINATIONS} destination addresses`);
  const row = await insertDestination(app.db, userId, a.value.address);
  await sendVerification(app, row);
  return presentDestination((await destinationByEmail(app.db, userId, row.email))!);
}

async function myDestination(app: FastifyInstance, userId: number, id: number): Promise<DestinationRow> {
  const [row] = rowsOf<DestinationRow>(
    await app.db.execute(sql`SELECT * FROM email_destinations WHERE id = ${id} AND user_id = ${userId}`),
  );
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', DESTINATION_NOT_FOUND);
  return row;
}

export async function resendVerification(app: FastifyInstance, userId: number, id: number) {
  const row = await myDestination(app, userId, id);
  if (row.verified_at) throw new ApiError('CP_ERR_CONFLICT', `${row.email} is already verified`);
  if (row.sent_at && Date.now() - new Date(row.sent_at).getTime() < RESEND_INTERVAL_MS)
    throw new ApiError(
      'CP_ERR_RATE_LIMITED',
      'a verification mail was sent less than a minute ago; wait, then try again',
    );
  await sendVerification(app, row);
  return presentDestination(await myDestination(app, userId, id));
}

export async function deleteDestination(app: FastifyInstance, userId: number, id: number) {
  const row = await myDestination(app, userId, id);
  await app.db.execute(sql`DELETE FROM email_destinations WHERE id = ${row.id}`);
  return { message: `destination ${row.email} deleted` };
}

const INVALID_TOKEN = 'invalid or already used verification token';

/** The emailed link: checks the signature and expiry, then marks the destination verified and spends the token. */
export async function verifyDestination(app: FastifyInstance, token: string) {
  const m = /^(\d{1,10})\.(\d{1,12})\.([A-Za-z0-9_-]{32})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) bad(INVALID_TOKEN);
  const [, id, exp, nonce, mac] = m as unknown as [string, string, string, string, string];
  const expected = Buffer.from(createHmac('sha256', linkKey(app)).update(`${id}.${exp}.${nonce}`).digest('base64url'));
  if (!timingSafeEqual(expected, Buffer.from(mac))) bad(INVALID_TOKEN);
  if (Number(exp) * 1000 < Date.now())
    throw new ApiError('CP_ERR_TOKEN_EXPIRED', 'the verification link expired; ask for a new one (resend)');
  const nonceHash = createHash('sha256').update(nonce).digest('hex');
  const [row] = rowsOf<DestinationRow>(
    await app.db
      .execute(sql`UPDATE email_destinations SET verified_at = now(), token_hash = NULL, token_expires_at = NULL
      WHERE id = ${Number(id)} AND token_hash = ${nonceHash} RETURNING *`),
  );
  if (!row) bad(INVALID_TOKEN);
  return presentDestination(row);
}

// ---- One-call setup and sending ----

export async function setup(
  app: FastifyInstance,
  lockFor: () => DomainLock,
  domain: DomainRow,
  body: { address: string; destination: string },
) {
  const status = await enable(app, lockFor(), domain.id, domain.name);
  const address = await createAddress(app, lockFor(), { address: body.address, destination: body.destination });
  return { routing: status, address };
}

export async function send(
  app: FastifyInstance,
  domain: DomainRow,
  body: { from: string; to: string; subject: string; text: string },
) {
  const features = await effectiveFeatures(app.db, domain.id);
  requireFeature(features, 'email_sending_enabled');
  const routing = await requireRouting(app, domain.id);
  if (!routing.enabled) throw new ApiError('CP_ERR_WRONG_STATE', NOT_ENABLED);
  const from = customAddress(body.from, domain.name);
  if (!from.ok) bad(`from: ${from.error}`);
  const to = emailAddress(body.to);
  if (!to.ok) bad(`to: ${to.error}`);
  if (/[\r\n]/.test(body.subject)) bad('subject must be one line');
  // Sending goes to the owner's verified destinations only (as Cloudflare's send_email): no open relay to strangers.
  const dest = await destinationByEmail(app.db, domain.ownerId, to.value.address);
  if (!dest?.verified_at) bad(`to: ${to.value.address} is not a verified destination of the domain's owner`);
  if (!(await takeDaily(app.db, domain.id, 'sends', features.max_email_sends_per_day)))
    throw new ApiError(
      'CP_ERR_PLAN_LIMIT',
      `daily send limit reached: your plan (${features.plan}) allows ${features.max_email_sends_per_day} sends a day (max_email_sends_per_day)`,
      { feature: 'max_email_sends_per_day' },
    );
  const sender = `${from.value}@${domain.name}`;
  const raw = plainMessage(sender, to.value.address, body.subject, body.text);
  const result = await deliver(deliveryContext(app), {
    from: sender,
    to: to.value.address,
    raw,
    dkim: {
      domainName: domain.name,
      keySelector: routing.dkim_selector,
      privateKey: openDkimKey(app, domain.name, routing.dkim_selector, routing.dkim_private_sealed),
    },
  });
  if (!result.ok) await giveBackDaily(app.db, domain.id, 'sends');
  await addActivity(app.db, domain.id, {
    direction: 'out',
    mail_from: sender,
    rcpt_to: to.value.address,
    destination: to.value.address,
    size: raw.length,
    action: result.ok ? 'sent' : result.temporary ? 'deferred' : 'bounced',
    reason: result.ok ? 'delivered' : 'the destination refused the message',
    smtp_response: result.response.slice(0, 512),
  });
  return { delivered: result.ok, response: result.response };
}

// ---- The mail node's calls ----

/** Where mail to `address` goes: refused (and logged for a routed domain), dropped, or forwarded to a verified address. */
export async function routeRecipient(app: FastifyInstance, address: string, from: string): Promise<RecipientRoute> {
  const a = emailAddress(address);
  if (!a.ok) return { accept: false, code: 550, reason: 'not a valid address' };
  const [row] = rowsOf<RoutingRow & { id: number; name: string; owner_id: number; state: string }>(
    await app.db.execute(sql`SELECT r.*, d.id, d.name, d.owner_id, d.state FROM domains d
      JOIN email_routing r ON r.domain_id = d.id WHERE d.name = ${a.value.domain}`),
  );
  if (!row || !row.enabled) return { accept: false, code: 550, reason: 'no email routing for this domain' };
  const refuse = async (code: number, reason: string): Promise<RecipientRoute> => {
    await addActivity(app.db, row.id, {
      mail_from: from.slice(0, 254),
      rcpt_to: a.value.address,
      action: 'refused',
      reason,
    });
    return { accept: false, code, reason, domain: row.name };
  };
  if (row.state === 'disabled' || row.state === 'banned') return refuse(550, `the domain is ${row.state}`);
  const features = await effectiveFeatures(app.db, row.id);
  if (!features.email_routing_enabled) return refuse(550, 'the plan does not include email routing');
  const [addr] = rowsOf<{ destination: string; enabled: boolean }>(
    await app.db.execute(sql`SELECT destination, enabled FROM email_addresses
      WHERE domain_id = ${row.id} AND local_part = ${a.value.local}`),
  );
  let destination: string;
  if (addr?.enabled) destination = addr.destination;
  else if (row.catch_all_enabled) {
    if (row.catch_all_action === 'drop')
      return { accept: true, code: 250, reason: 'catch-all: drop', domain: row.name, action: 'drop' };
    destination = row.catch_all_destination;
  } else return refuse(550, addr ? 'the address is disabled' : 'no such address');
  const dest = await destinationByEmail(app.db, row.owner_id, destination);
  if (!dest?.verified_at) return refuse(550, `the destination ${destination} is not verified`);
  return {
    accept: true,
    code: 250,
    reason: addr?.enabled ? 'address' : 'catch-all: forward',
    domain: row.name,
    action: 'forward',
    destination,
    dmarc_policy: row.settings?.dmarc_policy ?? 'honor',
  };
}

export async function dkimForNode(app: FastifyInstance, domainName: string) {
  const [row] = rowsOf<RoutingRow>(
    await app.db.execute(
      sql`SELECT r.* FROM email_routing r JOIN domains d ON d.id = r.domain_id WHERE d.name = ${domainName}`,
    ),
  );
  if (!row) return undefined;
  return {
    selector: row.dkim_selector,
    public_key: row.dkim_public_key,
    private_key_sealed: dkimKeyForNodes(
      app,
      domainName,
      row.dkim_selector,
      row.dkim_public_key,
      row.dkim_private_sealed,
    ),
  };
}

/**
 * The certificate the mail node presents in STARTTLS for `servername` (its SNI): the one the edge serves for that
 * name, of the domain it belongs to, when that domain has email routing on; its key sealed under the node token.
 * Undefined: the mail node presents its default certificate.
 */
export async function tlsForNode(app: FastifyInstance, servername: string) {
  const name = servername.toLowerCase();
  const [domain] = rowsOf<{ id: number; name: string }>(
    await app.db.execute(sql`SELECT d.id, d.name FROM domains d
      JOIN email_routing r ON r.domain_id = d.id AND r.enabled
      WHERE d.name = ANY(${`{${enclosingNames(name).join(',')}}`}::text[]) ORDER BY length(d.name) DESC LIMIT 1`),
  );
  if (!domain) return undefined;
  const [row] = rowsOf<{ name: string; certificates: SnapshotCertificateJson[] | string }>(
    await app.db.execute(sql`SELECT ${domain.name} AS name, ${snapshotCertificatesSql(domain.id)} AS certificates`),
  );
  if (!row) return undefined;
  const rows = typeof row.certificates === 'string' ? JSON.parse(row.certificates) : row.certificates;
  const cert = certificatesForNodes(vaultOf(app), row.name, rows, Date.now()).find(
    (x) => coveringName(new Set(x.hostnames), name) !== undefined,
  );
  if (!cert) return undefined;
  return {
    domain: row.name,
    certificate_pem: cert.certificatePem,
    private_key_sealed: Buffer.from(cert.privateKeySealed ?? []).toString('base64'),
  };
}

async function domainIdOf(app: FastifyInstance, name: string): Promise<number | undefined> {
  const [row] = rowsOf<{ id: number }>(await app.db.execute(sql`SELECT id FROM domains WHERE name = ${name}`));
  return row?.id;
}

export async function takeForward(app: FastifyInstance, domainName: string) {
  const id = await domainIdOf(app, domainName);
  if (id === undefined) return { ok: false, limit: 0 };
  const features = await effectiveFeatures(app.db, id);
  return {
    ok: await takeDaily(app.db, id, 'forwards', features.max_email_forwards_per_day),
    limit: features.max_email_forwards_per_day,
  };
}

export async function giveBackForward(app: FastifyInstance, domainName: string) {
  const id = await domainIdOf(app, domainName);
  if (id !== undefined) await giveBackDaily(app.db, id, 'forwards');
  return { ok: true };
}

export async function recordNodeActivity(app: FastifyInstance, entries: NodeActivity[]) {
  const byDomain = new Map<string, NodeActivity[]>();
  for (const e of entries) byDomain.set(e.domain, [...(byDomain.get(e.domain) ?? []), e]);
  let stored = 0;
  for (const [name, list] of byDomain) {
    const id = await domainIdOf(app, name);
    if (id === undefined) continue;
    await addActivity(app.db, id, ...list);
    stored += list.length;
  }
  return { stored };
}
