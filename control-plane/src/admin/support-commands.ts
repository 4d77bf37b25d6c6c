// Support's side of the tickets (spec Support; areas/support/): list, read, reply as support, close.
import type { CommandContext } from './commands.js';
import { idArgument, positionals, UsageError } from './args.js';
import { addMessage, closeTicket, getTicket, listTickets, MAX_MESSAGE_CHARS } from '../areas/support/store.js';
import { users } from '../db/schema.js';
import { eq } from 'drizzle-orm';

export const SUPPORT_USAGE = `  support list [--status open|answered|closed] [--limit N]
  support show TICKET_ID
  support reply TICKET_ID TEXT [--as NAME]   (the author is notified)
  support close TICKET_ID`;

const STATUSES = ['open', 'answered', 'closed'] as const;

export const SUPPORT_COMMANDS: Record<string, (ctx: CommandContext, args: string[]) => Promise<void>> = {
  async 'support list'(ctx, args) {
    const { values } = positionals(args, [], { status: { type: 'string' }, limit: { type: 'string' } });
    const status = values.status as (typeof STATUSES)[number] | undefined;
    if (status !== undefined && !STATUSES.includes(status))
      throw new UsageError(`--status must be one of ${STATUSES.join(', ')}`);
    const limit = values.limit === undefined ? 100 : idArgument(values.limit as string, '--limit');
    const rows = await listTickets(ctx.db, null, { limit: Math.min(limit, 1000), status });
    ctx.out('id\tstatus\tmessages\tuser_id\tupdated_at\tdomain\tsubject');
    for (const t of rows.slice(0, limit))
      ctx.out(
        [t.id, t.status, t.messageCount, t.userId, t.updatedAt.toISOString(), t.domain ?? '-', t.subject].join('\t'),
      );
  },
  async 'support show'(ctx, args) {
    const { pos } = positionals(args, ['TICKET_ID']);
    const { ticket, messages } = await getTicket(ctx.db, null, idArgument(pos[0], 'TICKET_ID'), false);
    const [author] = await ctx.db.select({ email: users.email }).from(users).where(eq(users.id, ticket.userId));
    ctx.out(`#${ticket.id} ${ticket.status}: ${ticket.subject}`);
    ctx.out(`from ${author?.email ?? ticket.userId}${ticket.domain ? ` about ${ticket.domain}` : ''}`);
    for (const m of messages) {
      ctx.out(`--- ${m.author === 'support' ? `support ${m.authorName}` : 'user'} at ${m.createdAt.toISOString()}`);
      ctx.out(m.body);
    }
  },
  async 'support reply'(ctx, args) {
    const { pos, values } = positionals(args, ['TICKET_ID', 'TEXT'], { as: { type: 'string' } });
    const id = idArgument(pos[0], 'TICKET_ID');
    const text = pos[1];
    if (text.trim() === '' || text.length > MAX_MESSAGE_CHARS)
      throw new UsageError(`TEXT must hold 1 to ${MAX_MESSAGE_CHARS} characters`);
    const name = ((values.as as string | undefined) ?? 'Support').slice(0, 100);
    const { ticket } = await addMessage(ctx.db, id, { support: name }, text);
    ctx.out(`replied in ticket #${ticket.id} (${ticket.messageCount} messages); its author is notified`);
  },
  async 'support close'(ctx, args) {
    const { pos } = positionals(args, ['TICKET_ID']);
    const ticket = await closeTicket(ctx.db, idArgument(pos[0], 'TICKET_ID'));
    ctx.out(`ticket #${ticket.id} is closed`);
  },
};
