// What a person on a domain can choose to be notified about: the notification feed's domain-wide categories
// (areas/notifications/categories.ts, the one list), the channels, and each role's defaults (a category's
// `default_roles`). Choices are stored per person and domain as category → channels (domain_notification_settings)
// and decide whom notifyDomain reaches. Categories addressed to one person (sharing, support, account: the payer,
// the invitee, a ticket's author) are not fanned out over members and so are not chosen per domain.
import { ROLES, type Role } from '../../auth/permissions.js';
import { NOTIFICATION_CATEGORIES, type NotificationCategory } from '../notifications/categories.js';

export const DOMAIN_CATEGORIES = NOTIFICATION_CATEGORIES.filter((c) => c.default_roles.length > 0);
export const CATEGORY_IDS: NotificationCategory[] = DOMAIN_CATEGORIES.map((c) => c.id);

export const NOTIFICATION_CHANNELS = [
  { id: 'feed', description: 'the notification feed (GET /notifications)', delivered: true },
  {
    id: 'email',
    description: 'an email to the account address; the choice is kept, but no mail relay runs here: nothing is sent',
    delivered: false,
  },
] as const;
export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[number]['id'];
export const CHANNEL_IDS = NOTIFICATION_CHANNELS.map((c) => c.id) as NotificationChannel[];

export type NotificationSettings = Partial<Record<NotificationCategory, NotificationChannel[]>>;

/** Each role's defaults: the feed for the categories whose default_roles hold the role, nothing for the others. */
export const ROLE_DEFAULTS: Readonly<Record<Role, NotificationSettings>> = Object.fromEntries(
  ROLES.map((role) => [
    role,
    Object.fromEntries(DOMAIN_CATEGORIES.map((c) => [c.id, c.default_roles.includes(role) ? ['feed'] : []])),
  ]),
) as Record<Role, NotificationSettings>;

/** The stored choices over the role's defaults (a category not stored is the default). */
export function effectiveSettings(role: Role, stored: Record<string, unknown> | null): NotificationSettings {
  const out = { ...ROLE_DEFAULTS[role] };
  if (!stored) return out;
  for (const category of CATEGORY_IDS) {
    const value = stored[category];
    if (Array.isArray(value)) out[category] = CHANNEL_IDS.filter((c) => value.includes(c));
  }
  return out;
}
