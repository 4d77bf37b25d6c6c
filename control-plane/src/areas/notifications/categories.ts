// The notification categories (spec Notifications; Sharing: "notification categories, channels and role defaults").
// A category groups the kinds of events a person may want or not; `default_roles` says which roles on a domain
// receive a domain's events of that category when nothing else was chosen. Categories with no default roles are
// addressed to one person (the payer, the author of a ticket, the invitee), never fanned out over a domain's members.
import type { Role } from '../../auth/permissions.js';

export const NOTIFICATION_CATEGORY_IDS = [
  'domain',
  'ssl',
  'uptime',
  'security',
  'billing',
  'sharing',
  'support',
  'account',
  'analytics',
] as const;
export type NotificationCategory = (typeof NOTIFICATION_CATEGORY_IDS)[number];

export interface CategoryInfo {
  id: NotificationCategory;
  description: string;
  /** Roles on a domain that receive the domain's events of this category by default. */
  default_roles: readonly Role[];
}

export const NOTIFICATION_CATEGORIES: readonly CategoryInfo[] = Object.freeze([
  {
    id: 'domain',
    description: 'Domain state: activated, verified, verification failed, disabled, deleted',
    default_roles: ['owner', 'admin'],
  },
  { id: 'ssl', description: 'Certificates issued, issuance failed', default_roles: ['owner', 'admin'] },
  { id: 'uptime', description: 'Origin outages opened and resolved', default_roles: ['owner', 'admin', 'editor'] },
  { id: 'security', description: 'Attacks detected on the domain', default_roles: ['owner', 'admin', 'editor'] },
  {
    id: 'billing',
    description: 'Subscriptions, plan changes, invoices, wallet, payer nomination',
    default_roles: ['owner'],
  },
  { id: 'sharing', description: 'Invitations and changes of your membership', default_roles: [] },
  { id: 'support', description: 'Replies to your support tickets', default_roles: [] },
  { id: 'account', description: 'Your account and its API keys', default_roles: [] },
  { id: 'analytics', description: 'Alerts of your saved analytics queries', default_roles: [] },
] satisfies CategoryInfo[]);

export function isNotificationCategory(value: string): value is NotificationCategory {
  return (NOTIFICATION_CATEGORY_IDS as readonly string[]).includes(value);
}

/** The roles on a domain that receive its events of `category` by default. */
export function defaultRolesOf(category: NotificationCategory): readonly Role[] {
  return NOTIFICATION_CATEGORIES.find((c) => c.id === category)!.default_roles;
}
