// Domain roles and the permissions each one holds (spec Authentication §4 and §7; the full mapping is ours, see docs/decisions.md).

export const ROLES = ['owner', 'admin', 'editor', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
/** Roles a member can be given; the owner is domains.owner_id, never a member row. */
export const MEMBER_ROLES = ['admin', 'editor', 'viewer'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

export const PERMISSIONS = [
  'domain.view', // read the domain and everything under it
  'domain.settings', // change domain settings, developer mode, checks, uptime, rules
  'domain.delete', // delete the domain (owner only)
  'ssl.manage', // issue, upload and choose certificates
  'records.edit', // create, change and delete DNS records
  'rules.edit', // create, change and delete edge rules
  'cache.purge', // purge and refresh the cache
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = Object.freeze({
  owner: PERMISSIONS,
  admin: ['domain.view', 'domain.settings', 'ssl.manage', 'records.edit', 'rules.edit', 'cache.purge'],
  editor: ['domain.view', 'records.edit', 'rules.edit', 'cache.purge'],
  viewer: ['domain.view'],
});

export function permissionsOf(role: Role): Permission[] {
  return [...ROLE_PERMISSIONS[role]];
}

export function isMemberRole(value: string): value is MemberRole {
  return (MEMBER_ROLES as readonly string[]).includes(value);
}
