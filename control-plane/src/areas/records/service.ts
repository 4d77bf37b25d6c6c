// Record operations: each write goes through changeDomain (domain row locked and read under the lock), validates
// against the zone, writes, and reports the records it changed (ONE config-log entry); a failed check stores nothing.
import type { FastifyInstance } from 'fastify';
import type { Db, Tx } from '../../db/index.js';
import type { domains } from '../../db/schema.js';
import { assertRecordsUnlocked, lockedEmailRecords, lockedRecordError } from '../email/service.js';
import { ApiError, isApiError, MESSAGES } from '../../errors.js';
import { effectiveFeatures, featuresOf, requireFeature, type EffectiveFeatures } from '../../plans/entitlements.js';
import { buildZone, bumpDomainConfigRow } from '../../config-log/snapshot.js';
import { changeDomain, type ConfigChange, type DomainLock, type DomainWrite } from '../../config-log/index.js';
import { sendBehind } from '../../db/pipeline.js';
import { exportZone } from './bind-export.js';
import { parseZoneFile, readZoneFile, type ParseResult } from './bind-parse.js';
import { applyPatch, buildRecord, sameFields } from './normalize.js';
import {
  apiToStored,
  countRecords,
  createWithContext,
  deleteRecords,
  listApiRecords,
  getRecord,
  copyRecords,
  insertRecords,
  listRecords,
  listRecordsAround,
  toStored,
  updateRecords,
  type RecordRow,
} from './store.js';
import { LIMITS, type RecordCreate, type RecordFields, type RecordPatch, type StoredRecord } from './types.js';
import { ZoneIndex } from './zone-index.js';
import { normalizeOwnerName } from './names.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import type { AddressPolicy } from '@platform/shared/address-policy';
import { originAddressProblem, originPolicy } from '../../origins/address-check.js';
import { HostHeaderOwnership } from '../../origins/host-header.js';
import { invalid } from './errors.js';

export type DomainRow = typeof domains.$inferSelect;

export interface BulkResult {
  succeeded: number;
  failed: number;
  results: { id: number; ok: boolean; error?: string }[];
}

export interface ImportPlan {
  records: (RecordFields & { line: number })[];
  skipped: { line: number; reason: string }[];
  errors: { line: number; error: string }[];
  /** Set when creating `records` would take the domain past its plan's max_records. */
  limitError: string | null;
}

function limitError(features: EffectiveFeatures, total: number): string | null {
  const max = features.max_records;
  return total > max
    ? `record limit reached: your plan (${features.plan}) allows at most ${max} records (max_records)`
    : null;
}

function gateHostHeader(features: EffectiveFeatures, next: RecordFields, previous: string | null): void {
  if (next.hostHeader !== null && next.hostHeader !== previous) requireFeature(features, 'host_header_edit_enabled');
}

/**
 * A proxied record's origin must be one the edge would connect to: checked on create and whenever the origin
 * (proxied, destination, scheme, port) changes, so an older record can still be edited or unproxied.
 */
function checkOrigin(policy: AddressPolicy, next: RecordFields, previous?: RecordFields): void {
  if (!next.proxied) return;
  if (
    previous?.proxied &&
    previous.destination === next.destination &&
    previous.scheme === next.scheme &&
    previous.port === next.port
  )
    return;
  const problem = originAddressProblem(policy, next.destination, next.scheme === 'Auto' ? [443, 80] : [next.port]);
  if (problem) throw invalid(`destination ${problem}`);
}

/** A host_header set or changed must be inside this domain or another active domain of the same owner. */
async function checkHostHeader(hosts: HostHeaderOwnership, next: RecordFields, previous: string | null): Promise<void> {
  if (next.hostHeader === null || next.hostHeader === previous) return;
  const problem = await hosts.problem(next.hostHeader);
  if (problem) throw invalid(`host_header ${problem}`);
}

/**
 * Runs `fn` through the one write path (changeDomain): the domain row is locked and read under the lock, so a
 * domain disabled or banned meanwhile refuses the write; `fn` reports the records it changed.
 */
async function write<T>(
  app: FastifyInstance,
  domain: DomainRow | DomainLock,
  fn: (tx: Tx, domain: DomainRow) => Promise<DomainWrite<T>>,
): Promise<T> {
  return changeDomain(app, 'lock' in domain ? domain : domain.id, async (tx, locked) => {
    assertNotFrozen(locked);
    return fn(tx, locked);
  });
}

async function indexOf(tx: Tx, domainId: number, names: string[]): Promise<ZoneIndex> {
  return new ZoneIndex((await listRecords(tx, domainId, names)).map(toStored));
}

/** The owner names `rawNames` normalise to; a name that does not normalise is that item's error later. */
function ownerNames(zone: string, rawNames: Iterable<string | undefined>): string[] {
  const names = new Set<string>();
  for (const raw of rawNames) {
    if (raw === undefined) continue;
    try {
      names.add(normalizeOwnerName(zone, raw));
    } catch {
      // reported by buildRecord / applyPatch for its item
    }
  }
  return [...names];
}

/**
 * The zone index a bulk write needs, not the whole zone: the records it names by id, and every record at an owner
 * name they have or will have (zone-index.ts checks one owner name at a time, so the checks decide as on the whole zone).
 */
async function indexAround(tx: Tx, domain: DomainRow, ids: number[], rawNames: Iterable<string | undefined>) {
  return new ZoneIndex(await listRecordsAround(tx, domain.id, ids, ownerNames(domain.name, rawNames)));
}

/**
 * `domain`: the caller's lock (auth/domain-access.ts writeAs) checks key and role on the locked row, in `zone` (the
 * domain's name, as writeAs read it from the path); the fields are checked after it (as after loadDomain: a caller
 * who may not edit the domain learns nothing from them), then the state, the plan's max_records and the zone rules.
 */
export async function createRecord(
  app: FastifyInstance,
  domain: DomainLock,
  zone: string,
  input: RecordCreate,
): Promise<RecordRow> {
  let record: RecordFields | undefined;
  let invalid: unknown;
  try {
    record = buildRecord(zone, input);
    checkOrigin(originPolicy(app.config), record);
  } catch (err) {
    invalid = err; // reported once the lock has checked the caller
  }
  // The insert goes right behind the lock statement (db/pipeline.ts: the same round trip on Postgres) and runs
  // after it: it reads the plan, the record count and the records at the name as they were before it, under the
  // lock, and the domain's config for the config log. A refusal below rolls it all back.
  let inserted: ReturnType<typeof createWithContext> | undefined;
  const lockThenInsert: DomainLock = {
    lock(tx) {
      if (!record || invalid !== undefined) return domain.lock(tx);
      const [locked, insert] = sendBehind(
        tx,
        () => domain.lock(tx),
        () => createWithContext(tx, zone, record),
      );
      inserted = insert;
      return locked;
    },
  };
  return changeDomain(app, lockThenInsert, async (tx, locked) => {
    if (!record || invalid !== undefined) throw invalid;
    assertNotFrozen(locked);
    const { plan, count, atName, row, config } = await inserted!;
    const features = await featuresOf(tx, plan);
    const problem = limitError(features, count + 1);
    if (problem) throw new ApiError('CP_ERR_PLAN_LIMIT', problem, { feature: 'max_records' });
    gateHostHeader(features, record, null);
    await checkHostHeader(new HostHeaderOwnership(tx, locked), record, null);
    new ZoneIndex(atName).check(record);
    return { value: row, change: { upsertedRecords: [row.id], read: config } };
  });
}

/** `domain`: the caller's lock (writeAs), as for createRecord. */
export async function updateRecord(
  app: FastifyInstance,
  domain: DomainLock,
  id: number,
  patch: RecordPatch,
): Promise<RecordRow> {
  return write(app, domain, async (tx, domain) => {
    const row = await getRecord(tx, domain.id, id);
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', 'record not found');
    // Email routing manages MX and TXT records only: other types skip the lookup.
    if (row.type === 'MX' || row.type === 'TXT') await assertRecordsUnlocked(tx, domain.id, [id]);
    const current = toStored(row);
    const next = applyPatch(domain.name, current, patch);
    if (sameFields(next, current)) return { value: row };
    checkOrigin(originPolicy(app.config), next, current);
    if (next.hostHeader !== current.hostHeader && next.hostHeader !== null)
      gateHostHeader(await effectiveFeatures(tx, domain.id), next, current.hostHeader);
    await checkHostHeader(new HostHeaderOwnership(tx, domain), next, current.hostHeader);
    (await indexOf(tx, domain.id, [next.name])).check(next, id);
    await updateRecords(tx, domain.id, [{ ...next, id }]);
    return { value: (await getRecord(tx, domain.id, id))!, change: { upsertedRecords: [id] } };
  });
}

/** `domain`: the caller's lock (writeAs), as for createRecord. */
export async function deleteRecord(app: FastifyInstance, domain: DomainLock, id: number): Promise<void> {
  await write(app, domain, async (tx, domain) => {
    await assertRecordsUnlocked(tx, domain.id, [id]);
    const deleted = await deleteRecords(tx, domain.id, [id]);
    if (deleted.length === 0) throw new ApiError('CP_ERR_NOT_FOUND', 'record not found');
    return { value: undefined, change: { removedRecords: deleted } };
  });
}

function itemError(err: unknown): string {
  if (isApiError(err)) return err.message;
  throw err;
}

/** Best effort: each item is checked against the zone as the earlier items left it; one snapshot for the batch. */
export async function batchUpdate(
  app: FastifyInstance,
  domain: DomainRow,
  updates: (RecordPatch & { id: number })[],
): Promise<BulkResult> {
  const policy = originPolicy(app.config);
  return write(app, domain, async (tx) => {
    const index = await indexAround(
      tx,
      domain,
      updates.map((u) => u.id),
      updates.map((u) => u.name),
    );
    let features: EffectiveFeatures | null = null;
    const hosts = new HostHeaderOwnership(tx, domain);
    const locked = await lockedEmailRecords(tx, domain.id);
    const changed = new Map<number, StoredRecord>();
    const results: BulkResult['results'] = [];
    for (const { id, ...patch } of updates) {
      try {
        const current = index.get(id);
        if (!current) throw new ApiError('CP_ERR_NOT_FOUND', 'record not found');
        if (locked.has(id)) throw lockedRecordError(id);
        const next = applyPatch(domain.name, current, patch);
        checkOrigin(policy, next, current);
        if (next.hostHeader !== null && next.hostHeader !== current.hostHeader) {
          features ??= await effectiveFeatures(tx, domain.id);
          gateHostHeader(features, next, current.hostHeader);
          await checkHostHeader(hosts, next, current.hostHeader);
        }
        index.check(next, id);
        const stored = { ...next, id };
        if (!sameFields(stored, current)) {
          index.remove(id);
          index.add(stored);
          changed.set(id, stored);
        }
        results.push({ id, ok: true });
      } catch (err) {
        results.push({ id, ok: false, error: itemError(err) });
      }
    }
    await updateRecords(tx, domain.id, [...changed.values()]);
    const succeeded = results.filter((r) => r.ok).length;
    return {
      value: { succeeded, failed: results.length - succeeded, results },
      change: { upsertedRecords: [...changed.keys()] },
    };
  });
}

export async function deleteMany(app: FastifyInstance, domain: DomainRow, ids: number[]): Promise<BulkResult> {
  const unique = [...new Set(ids)];
  return write(app, domain, async (tx) => {
    const locked = await lockedEmailRecords(tx, domain.id);
    const removed = await deleteRecords(
      tx,
      domain.id,
      unique.filter((id) => !locked.has(id)),
    );
    const deleted = new Set(removed);
    const results = unique.map((id) =>
      deleted.has(id)
        ? { id, ok: true }
        : { id, ok: false, error: locked.has(id) ? lockedRecordError(id).message : 'record not found' },
    );
    return {
      value: { succeeded: deleted.size, failed: unique.length - deleted.size, results },
      change: { removedRecords: removed },
    };
  });
}

const TOO_MANY = 'a zone file may hold at most ';
const fileTooLarge = (max: number) => `${TOO_MANY}${max} records`;

/**
 * The zone file `text` of `domain` parsed; `max` is its bound: 10,000 records, or as many as the domain's plan
 * allows when that is more (a large zone). POST records/import and import sessions share it.
 */
export async function parseImportFile(
  db: Db | Tx,
  domain: DomainRow,
  text: string,
): Promise<{ parsed: ParseResult; max: number }> {
  const max = await importBound(db, domain);
  return { parsed: parseZoneFile(domain.name, text, max), max };
}

/** The most records a zone file of `domain` may hold (parseImportFile). */
async function importBound(db: Db | Tx, domain: DomainRow): Promise<number> {
  return Math.max(LIMITS.importMaxRecords, (await effectiveFeatures(db, domain.id)).max_records);
}

/** `plan` of a parsed file's records with the file's own skipped and invalid lines added, each list in line order. */
export function withParsedLines(plan: ImportPlan, parsed: Omit<ParseResult, 'records'>): ImportPlan {
  // One at a time: spread into push, a file of a few hundred thousand invalid lines overflowed the call stack (500).
  for (const s of parsed.skipped) plan.skipped.push(s);
  for (const e of parsed.errors) plan.errors.push(e);
  plan.skipped.sort((a, b) => a.line - b.line);
  plan.errors.sort((a, b) => a.line - b.line);
  return plan;
}

/** A record of a zone file built (buildRecord) and checked on its own (checkOrigin), with its line. */
type Planned = ImportPlan['records'][number];

/**
 * A zone file read for an import (POST records/import and its preview): each record is built and its fields and
 * origin checked as it is parsed, before the domain's lock (they depend on nothing but the domain's name), so only
 * the built records are kept, not the parsed ones beside them (a 1,000,000-record import kept both until its write).
 * `parsed` holds the file's skipped lines and its invalid ones, those of the build included; `built` the rest, in
 * file order. planBuilt then checks them against the zone, as planRecords checks the items it builds itself.
 */
interface ImportFile {
  parsed: Omit<ParseResult, 'records'>;
  built: Planned[];
  max: number;
}

async function readImportFile(
  db: Db | Tx,
  domain: DomainRow,
  text: string,
  policy: AddressPolicy,
): Promise<ImportFile> {
  const max = await importBound(db, domain);
  const built: Planned[] = [];
  const buildErrors: ImportPlan['errors'] = [];
  const parsed = readZoneFile(domain.name, text, max, (line, input) => {
    try {
      const record = buildRecord(domain.name, input, { literalTxt: true }) as Planned;
      checkOrigin(policy, record);
      record.line = line;
      built.push(record);
    } catch (err) {
      buildErrors.push({ line, error: itemError(err) });
    }
  });
  // Not sorted here: withParsedLines sorts the plan's lines once.
  for (const e of buildErrors) parsed.errors.push(e);
  return { parsed, built, max };
}

/** What importing `text` would do, checked exactly as the API checks single creates. Stores nothing. */
async function planImport(tx: Tx, domain: DomainRow, text: string, policy: AddressPolicy): Promise<ImportPlan> {
  return planFile(tx, domain, await readImportFile(tx, domain, text, policy));
}

/** planImport of a file read already (readImportFile). */
async function planFile(tx: Tx, domain: DomainRow, { parsed, built, max }: ImportFile): Promise<ImportPlan> {
  if (parsed.tooLarge) {
    // Refused before any record is checked against the zone (and the rest of the file is not even read).
    return { records: [], skipped: [], errors: [{ line: 0, error: fileTooLarge(max) }], limitError: null };
  }
  return withParsedLines(await planBuilt(tx, domain, built), parsed);
}

/** What the checks of a batch of records against the zone need, and the plan they fill. */
interface PlanContext {
  plan: ImportPlan;
  existingCount: number;
  index: ZoneIndex;
  features: EffectiveFeatures;
  hosts: HostHeaderOwnership;
}

/**
 * The context to check `n` records at the owner names `names` gives (raw, to be normalised, or normalised already).
 * The records the checks need: none in an empty zone, the whole zone when it is no larger than the items (cheaper
 * than sending every owner name of a large file to find them), else those at the items' names.
 */
async function planContext(
  tx: Tx,
  domain: DomainRow,
  n: number,
  names: () => { raw: Iterable<string | undefined> } | { normalised: string[] },
): Promise<PlanContext> {
  const existingCount = await countRecords(tx, domain.id);
  let index: ZoneIndex;
  if (existingCount === 0) index = new ZoneIndex();
  else if (existingCount <= n) index = new ZoneIndex(await listRecordsAround(tx, domain.id, [], null));
  else {
    const given = names();
    const owners = 'raw' in given ? ownerNames(domain.name, given.raw) : [...new Set(given.normalised)];
    index = new ZoneIndex(await listRecordsAround(tx, domain.id, [], owners));
  }
  return {
    plan: { records: [], skipped: [], errors: [], limitError: null },
    existingCount,
    index,
    features: await effectiveFeatures(tx, domain.id),
    hosts: new HostHeaderOwnership(tx, domain),
  };
}

/**
 * The checks of one built record that need the zone (host header, the zone rules), then the record planned. A promise
 * only for a record with a host header to look up: a million records without one are planned without a million awaits.
 */
function planOne(ctx: PlanContext, record: Planned): Promise<void> | undefined {
  if (record.hostHeader === null) {
    planInZone(ctx, record);
    return undefined;
  }
  return (async () => {
    try {
      gateHostHeader(ctx.features, record, null);
      await checkHostHeader(ctx.hosts, record, null);
    } catch (err) {
      refuse(ctx, record, err);
      return;
    }
    planInZone(ctx, record);
  })();
}

function planInZone(ctx: PlanContext, record: Planned): void {
  try {
    ctx.index.check(record);
  } catch (err) {
    refuse(ctx, record, err);
    return;
  }
  ctx.index.add(record); // not stored yet: indexed by its name only
  ctx.plan.records.push(record);
}

function refuse(ctx: PlanContext, record: Planned, err: unknown): void {
  if (isApiError(err) && err.code === 'CP_ERR_RECORD_DUPLICATE')
    ctx.plan.skipped.push({ line: record.line, reason: 'an identical record already exists' });
  else ctx.plan.errors.push({ line: record.line, error: itemError(err) });
}

function finishPlan(ctx: PlanContext): ImportPlan {
  ctx.plan.limitError = limitError(ctx.features, ctx.existingCount + ctx.plan.records.length);
  return ctx.plan;
}

/** planRecords of records built already (readImportFile), in their order. */
async function planBuilt(tx: Tx, domain: DomainRow, built: readonly Planned[]): Promise<ImportPlan> {
  const ctx = await planContext(tx, domain, built.length, () => ({ normalised: built.map((r) => r.name) }));
  for (const record of built) {
    const checking = planOne(ctx, record);
    if (checking) await checking;
  }
  return finishPlan(ctx);
}

/**
 * What creating `items` would do, each checked exactly as a single create (fields, origin address, host header
 * and its plan feature, the zone rules against the records already there and the items before it): the records to
 * insert, the identical ones already present (skipped), the errors by line, and the plan's max_records. Stores
 * nothing. Import sessions and gateways (areas/gateways) share it; the zone import builds as it parses (planBuilt).
 */
export async function planRecords(
  tx: Tx,
  domain: DomainRow,
  items: ReadonlyArray<{ line: number; input: RecordCreate }>,
  policy: AddressPolicy,
  opts: { literalTxt?: boolean } = {},
): Promise<ImportPlan> {
  const ctx = await planContext(tx, domain, items.length, () => ({ raw: items.map((r) => r.input.name) }));
  for (const { line, input } of items) {
    let record: Planned;
    try {
      record = buildRecord(domain.name, input, opts) as Planned;
      checkOrigin(policy, record);
    } catch (err) {
      ctx.plan.errors.push({ line, error: itemError(err) });
      continue;
    }
    // The record was built for this item alone: its line is set on it (a copy per record, for an import of a
    // million, cost about 2 s of CPU and a million more objects live until the write).
    record.line = line;
    const checking = planOne(ctx, record);
    if (checking) await checking;
  }
  return finishPlan(ctx);
}

export async function previewImport(app: FastifyInstance, domain: DomainRow, text: string): Promise<ImportPlan> {
  return app.db.transaction((tx) => planImport(tx, domain, text, originPolicy(app.config)));
}

/** What an import did: the records created, their rows when few enough to list, the lines skipped. */
export interface ImportOutcome {
  created: number;
  rows: RecordRow[] | null;
  skipped: ImportPlan['skipped'];
}

/**
 * All or nothing: any invalid line (400) or the plan's record limit (403) stores nothing. Answers the number of
 * records created, and the created rows when at most LIMITS.importListedRecords (a large import reads no rows back).
 */
export async function importZone(app: FastifyInstance, domain: DomainRow, text: string): Promise<ImportOutcome> {
  // Parsed before the domain's lock is taken (it reads nothing but the plan's bound): the lock is held for the
  // checks against the zone and the write only. Its result is reported under the lock, as before.
  const file = await readImportFile(app.db, domain, text, originPolicy(app.config));
  return write<ImportOutcome>(app, domain, async (tx) => {
    const plan = await planFile(tx, domain, file);
    file.built = []; // the plan holds those it creates
    if (plan.errors.length) {
      const n = plan.errors.length;
      const first = plan.errors[0]!;
      const message =
        first.line === 0 && first.error.startsWith(TOO_MANY)
          ? `${first.error}; nothing was imported`
          : `the zone file has ${n} invalid line${n > 1 ? 's' : ''}; nothing was imported`;
      throw new ApiError('CP_ERR_RECORD_INVALID', message, { errors: plan.errors });
    }
    if (plan.limitError) throw new ApiError('CP_ERR_PLAN_LIMIT', plan.limitError, { feature: 'max_records' });
    const created = await createPlanned(tx, domain.id, plan.records);
    plan.records = []; // the config log's encoding holds them, and nothing else
    return {
      value: { created: created.ids.length, rows: created.rows, skipped: plan.skipped },
      change: created.change,
    };
  });
}

/**
 * Creates the records of an import's plan (POST records/import, an import session's commit) in the caller's
 * transaction, in their order, and answers their ids and the change for the config log (ONE entry). More than
 * LIMITS.importListedRecords: one COPY, and the entry is built from the records in hand (nothing read back; `rows`
 * null); fewer: one INSERT that answers the rows. Either way a failure throws, and the transaction stores nothing.
 */
export async function createPlanned(
  tx: Tx,
  domainId: number,
  records: ImportPlan['records'],
): Promise<{ ids: number[]; rows: RecordRow[] | null; change: ConfigChange }> {
  if (records.length <= LIMITS.importListedRecords) {
    const rows = await insertRecords(tx, domainId, records);
    const ids = rows.map((r) => r.id);
    return { ids, rows, change: { upsertedRecords: ids } };
  }
  const ids = await copyRecords(tx, domainId, records);
  const read = await bumpDomainConfigRow(tx, domainId);
  if (!read) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  read.records_in_hand = { ids, records };
  return { ids, rows: null, change: { upsertedRecords: ids, read } };
}

export async function exportZoneText(app: FastifyInstance, domain: DomainRow): Promise<string> {
  const rows = (await listApiRecords(app.db, domain.id)).map(apiToStored);
  const zone = buildZone(domain, [], app.config.nsSets);
  return exportZone(
    {
      zone: domain.name,
      serial: zone.serial,
      nameservers: zone.nameservers,
      nsTtl: zone.soaTtl, // nodes serve the apex NS set with the SOA's TTL
      soa: {
        mname: zone.soaMname,
        rname: zone.soaRname,
        refresh: zone.soaRefresh,
        retry: zone.soaRetry,
        expire: zone.soaExpire,
        minimum: zone.soaMinimum,
        ttl: zone.soaTtl,
      },
    },
    rows,
  );
}
