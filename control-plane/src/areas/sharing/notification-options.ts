// What a person on a domain can be notified about (categories), how (channels), and what each role gets until they
// choose (role defaults). Stored per person and domain as category → channels (domain_notification_settings).
import type { Role } from '../../auth/permissions.js';

export const NOTIFICATION_CATEGORIES = [
  { id: 'domain', description: 'the domain changes state: activated, verified, disabled, enabled, nameserver checks' },
  { id: 'ssl', description: 'certificates: issued, renewed, failed, about to expire' },
  { id: 'uptime', description: 'origin outages opened and resolved' },
  { id: 'security', description: 'attacks detected and what the automatic protection did' },
  { id: 'billing', description: 'the plan, its invoices and renewals, and who pays for the domain' },
  { id: 'members', description: 'members joining, leaving and changing role; invitations accepted' },
] as const;
export type NotificationCategory = (typeof NOTIFICATION_CATEGORIES)[number]['id'];
export const CATEGORY_IDS = NOTIFICATION_CATEGORIES.map((c) => c.id) as NotificationCategory[];

export const NOTIFICATION_CHANNELS = [
  { id: 'feed', description: 'the notification feed (GET /notifications)', delivered: true },
  {
    id: 'email',
    description: 'an email to the account address; the choice is kept, and mail goes out where a mail relay is set up',
    delivered: false,
  },
] as const;
export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[number]['id'];
export const CHANNEL_IDS = NOTIFICATION_CHANNELS.map((c) => c.id) as NotificationChannel[];

export type NotificationSettings = Record<NotificationCategory, NotificationChannel[]>;

const both: NotificationChannel[] = ['feed', 'email'];
const feed: NotificationChannel[] = ['feed'];

/**
 * Each role's defaults, like Cloudflare's: the owner hears about everything; an admin about everything but money;
 * an editor about what the domain serves, in the feed; a viewer about outages, in the feed.
 */
export const ROLE_DEFAULTS: Readonly<Record<Role, NotificationSettings>> = {
  owner: { domain: both, ssl: both, uptime: both, security: both, billing: both, members: both },
  admin: { domain: both, ssl: both, uptime: both, security: both, billing: [], members: both },
  editor: { domain: feed, ssl: feed, uptime: feed, security: feed, billing: [], members: [] },
  viewer: { domain: [], ssl: [], uptime: feed, security: [], billing: [], members: [] },
};

/** The stored choices over the role's defaults (a category not stored, or a stored value not known, is the default). */
export function effectiveSettings(role: Role, stored: Record<string, unknown> | null): NotificationSettings {
  const out = { ...ROLE_DEFAULTS[role] };
  if (!stored) return out;
  for (const category of CATEGORY_IDS) {
    const value = stored[category];
    if (Array.isArray(value)) out[category] = CHANNEL_IDS.filter((c) => value.includes(c));
  }
  return out;
}
