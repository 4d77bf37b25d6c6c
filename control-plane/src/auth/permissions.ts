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
  'members.manage', // invite, remove and change the role of members; see and revoke pending invitations
  'billing.manage', // choose which member's wallet pays for the domain (owner only)
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/**
 * THE role → permission mapping (README "Authentication and authorization" shows this table; the auth-matrix test,
 * test/e2e/auth-matrix.test.ts, checks every route against it). Like Cloudflare's roles: the owner (Super
 * Administrator) alone deletes the domain and decides who pays; an admin (Administrator) does everything else,
 * including managing members; an editor changes what the domain serves (records, rules, cache) but not its settings,
 * certificates or members; a viewer (Administrator Read Only) reads. Every role may leave the domain and choose its
 * own notifications (areas/sharing).
 */
const TABLE: Readonly<Record<Permission, Readonly<Record<Role, boolean>>>> = {
  //                 owner        admin        editor        viewer
  'domain.view': { owner: true, admin: true, editor: true, viewer: true },
  'domain.settings': { owner: true, admin: true, editor: false, viewer: false },
  'domain.delete': { owner: true, admin: false, editor: false, viewer: false },
  'ssl.manage': { owner: true, admin: true, editor: false, viewer: false },
  'records.edit': { owner: true, admin: true, editor: true, viewer: false },
  'rules.edit': { owner: true, admin: true, editor: true, viewer: false },
  'cache.purge': { owner: true, admin: true, editor: true, viewer: false },
  'members.manage': { owner: true, admin: true, editor: false, viewer: false },
  'billing.manage': { owner: true, admin: false, editor: false, viewer: false },
};

const granted = (role: Role): readonly Permission[] => Object.freeze(PERMISSIONS.filter((p) => TABLE[p][role]));

export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = Object.freeze({
  owner: granted('owner'),
  admin: granted('admin'),
  editor: granted('editor'),
  viewer: granted('viewer'),
});

export function hasPermission(role: Role, permission: Permission): boolean {
  return TABLE[permission][role];
}

export function permissionsOf(role: Role): Permission[] {
  return [...ROLE_PERMISSIONS[role]];
}

export function isMemberRole(value: string): value is MemberRole {
  return (MEMBER_ROLES as readonly string[]).includes(value);
}
