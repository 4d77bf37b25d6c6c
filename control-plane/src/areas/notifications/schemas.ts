// Request and response schemas of the notification feed (also the OpenAPI document).
import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../../openapi/schemas.js';
import { NOTIFICATION_CATEGORY_IDS } from './categories.js';

/** Ids one POST /notifications/read may name. */
export const MAX_READ_IDS = 100;

const Category = StringEnum([...NOTIFICATION_CATEGORY_IDS], { description: 'What the notification is about' });
const NotificationId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

export const Notification = Type.Object(
  {
    id: Type.Integer(),
    category: Category,
    kind: Type.String({ description: 'The event, dotted: `domain.activated`, `ssl.issued`, `uptime.opened`, …' }),
    title: Type.String(),
    body: Type.String(),
    domain: Nullable(Type.String({ description: 'The domain the event is about (its name at the time)' })),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'Facts of the event (ids, names)' }),
    read: Type.Boolean(),
    read_at: Nullable(Type.String({ format: 'date-time' })),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Notification' },
);

export const NotificationListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    cursor: Type.Optional(
      Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'The `next_cursor` of the previous page' }),
    ),
    unread: Type.Optional(Type.Boolean({ description: 'true: only notifications not yet read' })),
    category: Type.Optional(Category),
  },
  { additionalProperties: false },
);

export const NotificationList = Type.Object(
  {
    notifications: Type.Array(Notification),
    unread: Type.Integer({ description: 'Unread notifications in the whole feed' }),
    next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next (older) page' })),
  },
  { title: 'NotificationList' },
);

export const UnreadCount = Type.Object({ unread: Type.Integer() }, { title: 'NotificationUnreadCount' });

export const MarkRead = Type.Union(
  [
    Type.Object(
      { ids: Type.Array(NotificationId, { minItems: 1, maxItems: MAX_READ_IDS, uniqueItems: true }) },
      { additionalProperties: false },
    ),
    Type.Object({ all: Type.Literal(true) }, { additionalProperties: false }),
  ],
  {
    title: 'NotificationMarkRead',
    description: `\`{"ids": [...]}\` (at most ${MAX_READ_IDS}; ids of other accounts are ignored) or \`{"all": true}\``,
  },
);

export const MarkReadResult = Type.Object(
  {
    marked: Type.Integer({ description: 'Notifications that were unread and are now read' }),
    unread: Type.Integer({ description: 'Unread notifications left' }),
  },
  { title: 'NotificationMarkReadResult' },
);
