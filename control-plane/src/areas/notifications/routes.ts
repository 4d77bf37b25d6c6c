// The notification feed (spec Notifications): the caller's own notifications, newest first, bounded pages.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../openapi/schemas.js';
import { presentNotification } from './present.js';
import { MarkRead, MarkReadResult, NotificationList, NotificationListQuery, UnreadCount } from './schemas.js';
import { listNotifications, markRead, MAX_NOTIFICATIONS_PER_USER, unreadCount } from './store.js';

export default async function notificationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['notifications'];

  app.get(
    '/notifications',
    {
      schema: {
        summary: "List the caller's notifications",
        description:
          'Newest first, `limit` per page (1-100, 50 by default); `next_cursor` continues with the same filters. ' +
          `Domain, plan and account events; the newest ${MAX_NOTIFICATIONS_PER_USER} are kept.`,
        tags,
        querystring: NotificationListQuery,
        response: { 200: NotificationList, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { limit = 50, cursor, unread, category } = request.query;
      const userId = request.principal.userId;
      const rows = await listNotifications(app.db, userId, {
        limit,
        before: cursor === undefined ? undefined : Number(cursor),
        unread,
        category,
      });
      const page = rows.slice(0, limit);
      return {
        notifications: page.map(presentNotification),
        unread: await unreadCount(app.db, userId),
        next_cursor: rows.length > limit ? String(page[page.length - 1].id) : null,
      };
    },
  );

  app.get(
    '/notifications/unread-count',
    {
      schema: {
        summary: 'Count unseen notifications',
        tags,
        response: { 200: UnreadCount },
      },
    },
    async (request) => ({ unread: await unreadCount(app.db, request.principal.userId) }),
  );

  app.post(
    '/notifications/read',
    {
      schema: {
        summary: 'Mark notifications as seen',
        description: 'The given ids (ids of other accounts, or already read, are left alone) or all of them.',
        tags,
        body: MarkRead,
        response: { 200: MarkReadResult, ...errorResponses(400, 415) },
      },
    },
    async (request) => {
      const userId = request.principal.userId;
      const body = request.body;
      const marked = await markRead(app.db, userId, 'ids' in body ? body.ids : 'all');
      return { marked, unread: await unreadCount(app.db, userId) };
    },
  );
}
