// Resolves a {domain} path segment to the domain row and the caller's role on it; invisible → 404, lacking permission → 403.
import type { FastifyRequest } from 'fastify';
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';
import { domainMembers, domains } from '../db/schema.js';
import { ApiError, MESSAGES } from '../errors.js';
import { parseDomainName } from '../areas/domains/domain-name.js';
import type { DomainLock, DomainRow } from '../config-log/index.js';
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
  const { userId, keyHash } = request.principal;
  return {
    async lock(tx: Tx): Promise<DomainRow> {
      const [row] = await tx
        .select({
          domain: domains,
          // Qualified by hand: drizzle writes a single table's columns unqualified, which a subquery would rebind.
          role: sql<Role | null>`CASE WHEN "domains"."owner_id" = ${userId} THEN 'owner' ELSE
            (SELECT m.role FROM domain_members m WHERE m.domain_id = "domains"."id" AND m.user_id = ${userId}) END`,
          key: keyStateSql(keyHash),
        })
        .from(domains)
        .where(eq(domains.name, parsed.name))
        .for('update');
      const key = row
        ? row.key
        : rowsOf<{ key: KeyState | null }>(await tx.execute(sql`SELECT ${keyStateSql(keyHash)} AS key`))[0]?.key;
      assertKeyValid(key);
      if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
      checkRole(row.role, permission);
      return row.domain;
    },
  };
}

/** 'ok', 'inactive' (the account is deactivated), or null (no such key, revoked or expired). */
type KeyState = 'ok' | 'inactive';

function keyStateSql(keyHash: string) {
  return sql<KeyState | null>`(SELECT CASE WHEN u.active THEN 'ok' ELSE 'inactive' END
    FROM api_keys k JOIN users u ON u.id = k.user_id
    WHERE k.key_hash = ${keyHash} AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))`;
}

function assertKeyValid(state: KeyState | null | undefined): void {
  if (!state) throw new ApiError('CP_ERR_INVALID_API_KEY', MESSAGES.invalidKey);
  if (state === 'inactive') throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
}
