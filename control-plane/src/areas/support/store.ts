// Support tickets' SQL and the writes of both sides: the author (API) and support (admin command line). Each write
// locks the ticket row, so the message bound and the unread counter hold under concurrent replies.
import { and, asc, desc, eq, lt, ne, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { supportMessages, supportTickets } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { notify } from '../notifications/store.js';

export const MAX_SUBJECT_CHARS = 200;
export const MAX_MESSAGE_CHARS = 10_000;
/** Messages a ticket may hold, the opening one and support's replies included. */
export const MAX_MESSAGES_PER_TICKET = 200;
/** Tickets an account may have open (not closed) at once. */
export const MAX_OPEN_TICKETS = 20;

export type TicketRow = typeof supportTickets.$inferSelect;
export type MessageRow = typeof supportMessages.$inferSelect;
export type TicketStatus = TicketRow['status'];

export async function openTicket(
  db: Db,
  userId: number,
  input: { subject: string; body: string; domain: string | null },
): Promise<{ ticket: TicketRow; messages: MessageRow[] }> {
  return db.transaction(async (tx) => {
    // The account's row locked: opens of one account run one at a time, so two racing cannot pass the count below.
    await tx.execute(sql`SELECT 1 FROM users WHERE id = ${userId} FOR UPDATE`);
    const [open] = await tx
      .select({ n: sql<number>`count(*)::int` })
      .from(supportTickets)
      .where(and(eq(supportTickets.userId, userId), ne(supportTickets.status, 'closed')));
    if (open.n >= MAX_OPEN_TICKETS)
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `you have ${open.n} open tickets, the most an account may have: reply in one of them or wait until support closes one`,
      );
    const [ticket] = await tx
      .insert(supportTickets)
      .values({ userId, subject: input.subject, domain: input.domain, messageCount: 1 })
      .returning();
    const [message] = await tx
      .insert(supportMessages)
      .values({ ticketId: ticket.id, author: 'user', body: input.body })
      .returning();
    return { ticket, messages: [message] };
  });
}

export interface TicketListOptions {
  limit: number;
  before?: number;
  status?: TicketStatus;
}

export async function listTickets(db: Db, userId: number | null, o: TicketListOptions): Promise<TicketRow[]> {
  return db
    .select()
    .from(supportTickets)
    .where(
      and(
        userId === null ? undefined : eq(supportTickets.userId, userId),
        o.before !== undefined ? lt(supportTickets.id, o.before) : undefined,
        o.status ? eq(supportTickets.status, o.status) : undefined,
      ),
    )
    .orderBy(desc(supportTickets.id))
    .limit(o.limit + 1);
}

/** Tickets of the user with replies they have not read, and those replies. */
export async function unreadReplies(db: Db | Tx, userId: number): Promise<{ tickets: number; replies: number }> {
  const [row] = await db
    .select({
      tickets: sql<number>`count(*)::int`,
      replies: sql<number>`coalesce(sum(${supportTickets.unreadReplies}), 0)::int`,
    })
    .from(supportTickets)
    .where(and(eq(supportTickets.userId, userId), sql`${supportTickets.unreadReplies} > 0`));
  return row;
}

/**
 * One ticket with its messages (at most MAX_MESSAGES_PER_TICKET by construction). `userId` null: support's view.
 * The author reading it marks support's replies seen (when `markSeen`).
 */
export async function getTicket(
  db: Db,
  userId: number | null,
  id: number,
  markSeen: boolean,
): Promise<{ ticket: TicketRow; messages: MessageRow[] }> {
  return db.transaction(async (tx) => {
    const where = and(eq(supportTickets.id, id), userId === null ? undefined : eq(supportTickets.userId, userId));
    let [ticket] = await tx.select().from(supportTickets).where(where);
    if (!ticket) throw notFound(id);
    if (markSeen && ticket.unreadReplies > 0)
      [ticket] = await tx.update(supportTickets).set({ unreadReplies: 0 }).where(where).returning();
    const messages = await tx
      .select()
      .from(supportMessages)
      .where(eq(supportMessages.ticketId, id))
      .orderBy(asc(supportMessages.id))
      .limit(MAX_MESSAGES_PER_TICKET);
    return { ticket, messages };
  });
}

function notFound(id: number) {
  return new ApiError('CP_ERR_NOT_FOUND', `no ticket ${id}`);
}

/**
 * Adds a message: by the author (`userId` theirs: their ticket only; the ticket becomes `open`, awaiting support)
 * or by support (`userId` null: the ticket becomes `answered`, the author is notified and has one more unread
 * reply). A closed ticket takes no reply (400); nor one beyond MAX_MESSAGES_PER_TICKET.
 */
export async function addMessage(
  db: Db,
  ticketId: number,
  by: { userId: number } | { support: string },
  body: string,
): Promise<{ ticket: TicketRow; message: MessageRow }> {
  return db.transaction(async (tx) => {
    const bySupport = 'support' in by;
    const where = and(eq(supportTickets.id, ticketId), bySupport ? undefined : eq(supportTickets.userId, by.userId));
    const [current] = await tx.select().from(supportTickets).where(where).for('update');
    if (!current) throw notFound(ticketId);
    if (current.status === 'closed')
      throw new ApiError('CP_ERR_WRONG_STATE', `ticket ${ticketId} is closed: open a new ticket`);
    if (current.messageCount >= MAX_MESSAGES_PER_TICKET)
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `ticket ${ticketId} holds ${MAX_MESSAGES_PER_TICKET} messages, the most a ticket may: open a new ticket`,
      );
    const [message] = await tx
      .insert(supportMessages)
      .values({ ticketId, author: bySupport ? 'support' : 'user', authorName: bySupport ? by.support : '', body })
      .returning();
    const [ticket] = await tx
      .update(supportTickets)
      .set({
        status: bySupport ? 'answered' : 'open',
        messageCount: sql`${supportTickets.messageCount} + 1`,
        unreadReplies: bySupport ? sql`${supportTickets.unreadReplies} + 1` : supportTickets.unreadReplies,
        updatedAt: sql`now()`,
      })
      .where(eq(supportTickets.id, ticketId))
      .returning();
    if (bySupport)
      await notify(tx, {
        userId: ticket.userId,
        category: 'support',
        kind: 'support.reply',
        title: `Support replied to ticket #${ticket.id}: ${ticket.subject}`,
        body: body.slice(0, 500),
        domain: ticket.domain,
        data: { ticket_id: ticket.id, message_id: message.id },
      });
    return { ticket, message };
  });
}

/** Support closes a ticket (no more replies); the author is notified. Closing a closed ticket changes nothing. */
export async function closeTicket(db: Db, ticketId: number): Promise<TicketRow> {
  return db.transaction(async (tx) => {
    const [current] = await tx.select().from(supportTickets).where(eq(supportTickets.id, ticketId)).for('update');
    if (!current) throw notFound(ticketId);
    if (current.status === 'closed') return current;
    const [ticket] = await tx
      .update(supportTickets)
      .set({ status: 'closed', closedAt: sql`now()`, updatedAt: sql`now()` })
      .where(eq(supportTickets.id, ticketId))
      .returning();
    await notify(tx, {
      userId: ticket.userId,
      category: 'support',
      kind: 'support.closed',
      title: `Ticket #${ticket.id} was closed: ${ticket.subject}`,
      domain: ticket.domain,
      data: { ticket_id: ticket.id },
    });
    return ticket;
  });
}
