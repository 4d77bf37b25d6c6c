// Ticket and message rows → API bodies.
import type { MessageRow, TicketRow } from './store.js';

export function presentTicket(t: TicketRow) {
  return {
    id: t.id,
    subject: t.subject,
    domain: t.domain,
    status: t.status,
    message_count: t.messageCount,
    unread_replies: t.unreadReplies,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
    closed_at: t.closedAt ? t.closedAt.toISOString() : null,
  };
}

export function presentMessage(m: MessageRow) {
  return {
    id: m.id,
    author: m.author,
    author_name: m.authorName,
    body: m.body,
    created_at: m.createdAt.toISOString(),
  };
}

export function presentTicketWithMessages(v: { ticket: TicketRow; messages: MessageRow[] }) {
  return { ticket: presentTicket(v.ticket), messages: v.messages.map(presentMessage) };
}
