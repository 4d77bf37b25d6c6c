// Request and response schemas of support tickets (also the OpenAPI document).
import { Type } from '@sinclair/typebox';
import { Id, Nullable, StringEnum } from '../../openapi/schemas.js';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES_PER_TICKET, MAX_OPEN_TICKETS, MAX_SUBJECT_CHARS } from './store.js';

const Timestamp = Type.String({ format: 'date-time' });
const TicketStatus = StringEnum(['open', 'answered', 'closed'], {
  description: '`open`: awaiting support; `answered`: support replied, awaiting you; `closed`: no more replies',
});
/** A one-line subject: no control characters. */
const Subject = Type.String({
  minLength: 1,
  maxLength: MAX_SUBJECT_CHARS,
  pattern: '^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*$',
});
/** Any text with a visible character and no NUL (Postgres stores no U+0000); linear: a lookahead, then one greedy run. */
const MessageText = Type.String({
  minLength: 1,
  maxLength: MAX_MESSAGE_CHARS,
  pattern: '^(?=[^\\u0000]*$)[\\s\\S]*\\S',
  'x-expected': 'text with a visible character and without the NUL character (U+0000)',
});

export const Ticket = Type.Object(
  {
    id: Type.Integer(),
    subject: Type.String(),
    domain: Nullable(Type.String({ description: 'The domain the ticket is about' })),
    status: TicketStatus,
    message_count: Type.Integer(),
    unread_replies: Type.Integer({ description: "Support's replies not yet read (reading the ticket clears them)" }),
    created_at: Timestamp,
    updated_at: Timestamp,
    closed_at: Nullable(Timestamp),
  },
  { title: 'SupportTicket' },
);

export const TicketMessage = Type.Object(
  {
    id: Type.Integer(),
    author: StringEnum(['user', 'support']),
    author_name: Type.String({ description: "Support's signature; empty for your own messages" }),
    body: Type.String(),
    created_at: Timestamp,
  },
  { title: 'SupportMessage' },
);

export const TicketWithMessages = Type.Object(
  { ticket: Ticket, messages: Type.Array(TicketMessage) },
  { title: 'SupportTicketWithMessages' },
);

export const TicketListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    cursor: Type.Optional(
      Type.String({ pattern: '^[1-9][0-9]{0,9}$', description: 'The previous page’s next_cursor' }),
    ),
    status: Type.Optional(TicketStatus),
  },
  { additionalProperties: false },
);

export const TicketList = Type.Object(
  { tickets: Type.Array(Ticket), next_cursor: Nullable(Type.String()) },
  { title: 'SupportTicketList' },
);

export const TicketCreate = Type.Object(
  {
    subject: Subject,
    body: MessageText,
    domain: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, description: 'A domain of yours (or shared with you) it is about' }),
    ),
  },
  {
    title: 'SupportTicketCreate',
    additionalProperties: false,
    description: `At most ${MAX_OPEN_TICKETS} tickets open at once; a ticket holds at most ${MAX_MESSAGES_PER_TICKET} messages.`,
  },
);

export const TicketReply = Type.Object(
  { body: MessageText },
  { title: 'SupportTicketReply', additionalProperties: false },
);

export const TicketParams = Type.Object({ id: Id('Ticket id') });

export const UnreadReplies = Type.Object(
  {
    tickets: Type.Integer({ description: 'Tickets with replies you have not read' }),
    replies: Type.Integer({ description: 'Replies you have not read, over all tickets' }),
  },
  { title: 'SupportUnreadCount' },
);
