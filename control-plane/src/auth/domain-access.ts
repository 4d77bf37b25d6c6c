// Resolves a {domain} path segment to the domain row and the caller's role on it; invisible → 404, lacking permission → 403.
import type { FastifyRequest } from 'fastify';
import { and, eq, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Tx } from '../db/index.js';
import { compiled } from '../db/compiled.js';
import { sendTogether } from '../db/pipeline.js';
import { domainMembers, domains } from '../db/schema.js';
import { ApiError, MESSAGES } from '../errors.js';
import { parseDomainName } from '../areas/domains/domain-name.js';
import type { DomainLock, DomainRow } from '../config-log/index.js';
import { sessionStateSql, sessionStillValid } from '../areas/login/store.js';
import type { Principal } from './authenticate.js';
import { hasPermission, permissionsOf, type Permission, type Role } from './permissions.js';

export interface DomainAccess {
  domain: typeof domains.$inferSelect;
  role: Role;
  permissions: Permission[];
}

/** The caller's role on a domain row, or null when the domain is not visible to them. */
export async function roleOn(request: FastifyRequest, domain: typeof domains.$inferSelect): Promise<Role | null> {
  const userId = request.principal.userId;
  if (domain.ownerId === userId) return 'owner';
  const [member] = await request.server.db
    .select({ role: domainMembers.role })
    .from(domainMembers)
    .where(and(eq(domainMembers.domainId, domain.id), eq(domainMembers.userId, userId)))
    .limit(1);
  return member ? member.role : null;
}

/**
 * domainParam is the raw path segment (percent-decoded or not; IDN → punycode, lower case, trailing dot dropped).
 * permission null: any visible domain. A name that cannot be a domain is also 404: it names nothing the caller can see.
 */
export async function loadDomain(
  request: FastifyRequest,
  domainParam: string,
  permission: Permission | null,
): Promise<DomainAccess> {
  const parsed = parseDomainName(domainParam);
  if (!parsed.ok) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  const [domain] = await request.server.db.select().from(domains).where(eq(domains.name, parsed.name)).limit(1);
  if (!domain) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  const role = await roleOn(request, domain);
  return { domain, role: checkRole(role, permission), permissions: permissionsOf(role!) };
}

/** 404 when the caller has no role on the domain, 403 when their role lacks `permission`. */
function checkRole(role: Role | null, permission: Permission | null): Role {
  if (!role) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  if (permission) assertPermission(role, permission);
  return role;
}

/** 403 when `role` lacks `permission`: for a route whose permission depends on its body or target (areas/sharing). */
export function assertPermission(role: Role, permission: Permission): void {
  if (!hasPermission(role, permission))
    throw new ApiError('CP_ERR_ROLE', `your role (${role}) lacks the ${permission} permission on this domain`);
}

/** A route that takes its domain through writeAs: its key is checked again on the locked row, not in a preHandler. */
export const KEY_CHECKED_BY_WRITE = { keyCheckedByWrite: true } as const;

/**
 * The domain a write names, as its caller, for changeDomain: the statement that locks the row also reads the
 * caller's role on it and whether their key is still valid, so the write reads nothing before its transaction and
 * decides on the locked row. Refusals as loadDomain's (404 invisible or not a domain name, 403 role), and the
 * authentication's for a key revoked or expired, or an account deactivated, while the request was in flight (spec
 * Authentication §3: 401 `invalid API key`, 403 `account is inactive`); the route sets KEY_CHECKED_BY_WRITE in its
 * config so the authentication's preHandler does not read the key a second time. Throws 404 at once for a name
 * that cannot be a domain.
 */
export function writeAs(request: FastifyRequest, domainParam: string, permission: Permission): DomainLock {
  const parsed = parseDomainName(domainParam);
  if (!parsed.ok) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  return {
    async lock(tx: Tx): Promise<DomainRow> {
      const deferred = request.deferredKey;
      let answer: Promise<LockRow[]>;
      if (deferred) {
        // KEY_READ_BY_WRITE: the key's lookup (and count, outside the transaction), the lock and what the caller
        // queues behind it leave in one write; a refused key rolls back the lock and all behind it.
        const values = { name: parsed.name, hash: deferred.keyHash };
        let keyChecked: Promise<void>;
        [keyChecked, answer] = sendTogether(tx, () => [deferred.settle(tx), lockStatement<LockRow>(tx, values)]);
        answer.catch(() => undefined); // reported below, unless the key's refusal is
        await keyChecked;
      } else {
        const { sessionId, userId, keyHash } = request.principal;
        answer =
          sessionId === undefined
            ? lockStatement<LockRow>(tx, { name: parsed.name, hash: keyHash })
            : sessionLockStatement<LockRow>(tx, { name: parsed.name, user: userId, session: sessionId });
      }
      const [row] = await answer;
      const principal = request.principal; // set by the key's settlement when it was deferred
      const key = row
        ? row.key
        : principal.sessionId === undefined
          ? (await keyStateStatement<{ key: KeyState | null }>(tx, { hash: principal.keyHash }))[0]?.key
          : await sessionStillValid(tx, principal.sessionId);
      assertCredentialValid(key, principal);
      if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
      checkRole(row.role, permission);
      return domainOf(row);
    },
  };
}

/** A row of lockStatement as either driver returns it (timestamps as epoch ms, JSON and bigint as text). */
interface LockRow {
  id: number;
  name: string;
  owner_id: number;
  dns_mode: DomainRow['dnsMode'];
  state: string;
  verification_state: string | null;
  ns_set_index: number | null;
  cache_l2_ttl_days: number;
  cache_cap_mb: number;
  origin_protocol: string;
  under_attack: boolean;
  developer_mode_until_ms: number | null;
  verification: string | null;
  ssl_delegation: string | null;
  settings: string;
  zone_serial: number;
  config_bytes: string | number;
  created_at_ms: number;
  updated_at_ms: number;
  role: Role | null;
  key: KeyState | null;
}

const epochMs = (column: SQL) => sql`(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * writeAs's statement, compiled once (db/compiled.ts; drizzle's query builder rebuilt its text on every write): the
 * domain row locked, with the caller's role on it and their key's state. Every column of `domains` (DomainRow),
 * in forms both drivers parse alike.
 */
function lockSql(name: Placeholder, user: Placeholder | SQL, credential: SQL) {
  return sql`SELECT d.id, d.name, d.owner_id, d.dns_mode, d.state, d.verification_state, d.ns_set_index,
      d.cache_l2_ttl_days, d.cache_cap_mb, d.origin_protocol, d.under_attack,
      ${epochMs(sql`d.developer_mode_until`)} AS developer_mode_until_ms, d.verification::text AS verification,
      d.ssl_delegation::text AS ssl_delegation, d.settings::text AS settings, d.zone_serial,
      d.config_bytes::text AS config_bytes, ${epochMs(sql`d.created_at`)} AS created_at_ms,
      ${epochMs(sql`d.updated_at`)} AS updated_at_ms,
      CASE WHEN d.owner_id = ${user} THEN 'owner' ELSE
        (SELECT m.role FROM domain_members m WHERE m.domain_id = d.id AND m.user_id = ${user}) END AS role,
      ${credential} AS key
    FROM domains d WHERE d.name = ${name} FOR UPDATE OF d`;
}

/**
 * For an API key: the caller is the key's account, read in the statement (the key may not have been looked up
 * yet: KEY_READ_BY_WRITE sends its lookup in the same write).
 */
const lockStatement = compiled<'name' | 'hash'>((p) =>
  lockSql(p('name'), sql`(SELECT user_id FROM api_keys WHERE key_hash = ${p('hash')})`, keyStateSql(p('hash'))),
);

/** The same for a browser session (the panel calls the API with it, areas/login): the session's state. */
const sessionLockStatement = compiled<'name' | 'user' | 'session'>((p) =>
  lockSql(p('name'), p('user'), sessionStateSql(p('session'))),
);

/** The key's state alone, for a name that is no domain (the key's refusal comes first). */
const keyStateStatement = compiled<'hash'>((p) => sql`SELECT ${keyStateSql(p('hash'))} AS key`);

const parseJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));
const date = (ms: number | null) => (ms === null ? null : new Date(Number(ms)));

function domainOf(row: LockRow): DomainRow {
  return {
    id: row.id,
    name: row.name,
    ownerId: row.owner_id,
    dnsMode: row.dns_mode,
    state: row.state,
    verificationState: row.verification_state,
    nsSetIndex: row.ns_set_index,
    cacheL2TtlDays: row.cache_l2_ttl_days,
    cacheCapMb: row.cache_cap_mb,
    originProtocol: row.origin_protocol,
    underAttack: row.under_attack,
    developerModeUntil: date(row.developer_mode_until_ms),
    verification: parseJson<Record<string, unknown>>(row.verification),
    sslDelegation: parseJson<Record<string, unknown>>(row.ssl_delegation),
    settings: parseJson<Record<string, unknown>>(row.settings) ?? {},
    zoneSerial: row.zone_serial,
    configBytes: Number(row.config_bytes),
    createdAt: date(row.created_at_ms)!,
    updatedAt: date(row.updated_at_ms)!,
  };
}

/** 'ok', 'inactive' (the account is deactivated), or null (no such key, revoked or expired). */
type KeyState = 'ok' | 'inactive';

function keyStateSql(keyHash: string | Placeholder) {
  return sql<KeyState | null>`(SELECT CASE WHEN u.active THEN 'ok' ELSE 'inactive' END
    FROM api_keys k JOIN users u ON u.id = k.user_id
    WHERE k.key_hash = ${keyHash} AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))`;
}

function assertCredentialValid(state: KeyState | null | undefined, principal: Principal): void {
  if (!state && principal.sessionId !== undefined) throw new ApiError('CP_ERR_NOT_SIGNED_IN', 'not signed in');
  if (!state) throw new ApiError('CP_ERR_INVALID_API_KEY', MESSAGES.invalidKey);
  if (state === 'inactive') throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
}
