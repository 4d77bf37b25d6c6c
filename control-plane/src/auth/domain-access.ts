// Resolves a {domain} path segment to the domain row and the caller's role on it; invisible → 404, lacking permission → 403.
import type { FastifyRequest } from 'fastify';
import { and, eq } from 'drizzle-orm';
import { domainMembers, domains } from '../db/schema.js';
import { ApiError, MESSAGES } from '../errors.js';
import { parseDomainName } from '../areas/domains/domain-name.js';
import { permissionsOf, type Permission, type Role } from './permissions.js';

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
  if (!role) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  const permissions = permissionsOf(role);
  if (permission && !permissions.includes(permission)) {
    throw new ApiError('CP_ERR_ROLE', `your role (${role}) lacks the ${permission} permission on this domain`);
  }
  return { domain, role, permissions };
}
