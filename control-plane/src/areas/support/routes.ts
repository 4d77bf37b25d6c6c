// Support tickets (spec "Further operations", Support): the caller's own tickets. Support answers and closes them
// through the admin command line (admin/support-commands.ts).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { errorResponses, idSegment } from '../../openapi/schemas.js';
import { presentTicket, presentTicketWithMessages } from './present.js';
import {
  TicketCreate,
  TicketList,
  TicketListQuery,
  TicketParams,
  TicketReply,
  TicketWithMessages,
  UnreadReplies,
} from './schemas.js';
import { addMessage, getTicket, listTickets, openTicket, unreadReplies } from './store.js';

export default async function supportRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['support'];

  app.get(
    '/support/tickets',
    {
      schema: {
        summary: 'List your support tickets',
        description: 'Newest first, `limit` per page (1-100, 50 by default); `next_cursor` continues.',
        tags,
        querystring: TicketListQuery,
        response: { 200: TicketList, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { limit = 50, cursor, status } = request.query;
      const rows = await listTickets(app.db, request.principal.userId, {
        limit,
        before: cursor === undefined ? undefined : Number(cursor),
        status,
      });
      const page = rows.slice(0, limit);
      return {
        tickets: page.map(presentTicket),
        next_cursor: rows.length > limit ? String(page[page.length - 1].id) : null,
      };
    },
  );

  app.post(
    '/support/tickets',
    {
      schema: {
        summary: 'Open a support ticket',
        tags,
        body: TicketCreate,
        response: { 200: TicketWithMessages, ...errorResponses(400, 404, 415) },
      },
    },
    async (request) => {
      const { subject, body, domain } = request.body;
      // A domain named must be one the caller sees (404 otherwise, as everywhere).
      const name = domain === undefined ? null : (await loadDomain(request, domain, null)).domain.name;
      return presentTicketWithMessages(
        await openTicket(app.db, request.principal.userId, { subject: subject.trim(), body, domain: name }),
      );
    },
  );

  app.get(
    '/support/tickets/unread-count',
    {
      schema: {
        summary: 'Count tickets with replies you have not read',
        tags,
        response: { 200: UnreadReplies },
      },
    },
    async (request) => unreadReplies(app.db, request.principal.userId),
  );

  app.get(
    `/support/tickets/${idSegment('id')}`,
    {
      schema: {
        summary: 'One ticket with its messages',
        description: "Reading it marks support's replies read.",
        tags,
        params: TicketParams,
        response: { 200: TicketWithMessages, ...errorResponses(400, 404) },
      },
    },
    async (request) =>
      presentTicketWithMessages(await getTicket(app.db, request.principal.userId, request.params.id, true)),
  );

  app.post(
    `/support/tickets/${idSegment('id')}/replies`,
    {
      schema: {
        summary: 'Reply in a ticket',
        description: 'The ticket becomes `open` (awaiting support). A closed ticket takes no reply (400).',
        tags,
        params: TicketParams,
        body: TicketReply,
        response: { 200: TicketWithMessages, ...errorResponses(400, 404, 415) },
      },
    },
    async (request) => {
      const userId = request.principal.userId;
      await addMessage(app.db, request.params.id, { userId }, request.body.body);
      return presentTicketWithMessages(await getTicket(app.db, userId, request.params.id, false));
    },
  );
}
