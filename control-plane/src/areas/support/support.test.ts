// Support tickets through the API (list, open, unread-reply count, one with messages, reply) and support's side
// through the admin command line (list, show, reply, close); bounds and abuse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq, sql } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { COMMANDS, UsageError } from '../../admin/commands.js';
import { supportTickets } from '../../db/schema.js';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES_PER_TICKET, MAX_OPEN_TICKETS, MAX_SUBJECT_CHARS } from './store.js';

interface Ticket {
  id: number;
  subject: string;
  domain: string | null;
  status: string;
  message_count: number;
  unread_replies: number;
  closed_at: string | null;
}
interface Message {
  author: string;
  author_name: string;
  body: string;
}
interface WithMessages {
  ticket: Ticket;
  messages: Message[];
}

test('support tickets: the author through the API, support through the admin command line', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const alice = await cp.user();
  const bob = await cp.user();
  const readOnly = await cp.key(alice.id, { readOnly: true });
  const name = await cp.domain(alice.key, 'ticket.example.org');
  const bobsDomain = await cp.domain(bob.key, 'bobs.example.org');
  const lines: string[] = [];
  const ctx = { db, configLog: cp.app.configLog, out: (l: string) => lines.push(l) };
  const admin = async (...argv: string[]) => {
    lines.length = 0;
    await COMMANDS[`${argv[0]} ${argv[1]}`](ctx, argv.slice(2));
    return [...lines];
  };
  let id = 0;

  await t.test('open a ticket, optionally about a domain the caller sees', async () => {
    const res = await cp.call(alice.key, 'POST', '/support/tickets', {
      subject: '  Records do not resolve  ',
      body: 'My www record answers NXDOMAIN.\nSince this morning.',
      domain: 'Ticket.Example.org.',
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<WithMessages>();
    id = body.ticket.id;
    assert.deepEqual(
      { ...body.ticket, id: 0, created_at: undefined, updated_at: undefined },
      {
        id: 0,
        subject: 'Records do not resolve',
        domain: name,
        status: 'open',
        message_count: 1,
        unread_replies: 0,
        closed_at: null,
        created_at: undefined,
        updated_at: undefined,
      },
    );
    assert.deepEqual(
      body.messages.map((m) => [m.author, m.body]),
      [['user', 'My www record answers NXDOMAIN.\nSince this morning.']],
    );
    const hidden = await cp.call(alice.key, 'POST', '/support/tickets', {
      subject: 's',
      body: 'b',
      domain: bobsDomain,
    });
    assert.deepEqual([hidden.statusCode, hidden.json()], [404, { error: 'domain not found' }]);
    const plain = await cp.call(alice.key, 'POST', '/support/tickets', { subject: 'Billing question', body: 'Hi' });
    assert.equal(plain.json<WithMessages>().ticket.domain, null);
  });

  await t.test('list (newest first, paged, by status); another user sees none of them', async () => {
    const list = (await cp.call(alice.key, 'GET', '/support/tickets')).json<{ tickets: Ticket[] }>();
    assert.deepEqual(
      list.tickets.map((x) => x.subject),
      ['Billing question', 'Records do not resolve'],
    );
    const page = (await cp.call(alice.key, 'GET', '/support/tickets?limit=1')).json<{ next_cursor: string }>();
    const next = (await cp.call(alice.key, 'GET', `/support/tickets?limit=1&cursor=${page.next_cursor}`)).json<{
      tickets: Ticket[];
      next_cursor: null;
    }>();
    assert.deepEqual([next.tickets[0].id, next.next_cursor], [id, null]);
    assert.deepEqual((await cp.call(bob.key, 'GET', '/support/tickets')).json(), { tickets: [], next_cursor: null });
    assert.equal((await cp.call(bob.key, 'GET', `/support/tickets/${id}`)).statusCode, 404);
    const reply = await cp.call(bob.key, 'POST', `/support/tickets/${id}/replies`, { body: 'me too' });
    assert.deepEqual([reply.statusCode, reply.json()], [404, { error: `no ticket ${id}` }]);
    assert.equal((await cp.call(alice.key, 'GET', '/support/tickets?status=closed')).json().tickets.length, 0);
  });

  await t.test(
    'support replies: the ticket is answered, the author notified and counted unread until read',
    async () => {
      const listed = await admin('support', 'list', '--status', 'open');
      assert.equal(listed[0], 'id\tstatus\tmessages\tuser_id\tupdated_at\tdomain\tsubject');
      assert.ok(
        listed.some(
          (l) => l.startsWith(`${id}\topen\t1\t${alice.id}\t`) && l.endsWith(`\t${name}\tRecords do not resolve`),
        ),
      );
      assert.deepEqual(await admin('support', 'reply', String(id), 'Your NS are not ours yet.', '--as', 'Sam'), [
        `replied in ticket #${id} (2 messages); its author is notified`,
      ]);
      await admin('support', 'reply', String(id), 'Any news?');
      assert.deepEqual((await cp.call(alice.key, 'GET', '/support/tickets/unread-count')).json(), {
        tickets: 1,
        replies: 2,
      });
      const feed = (await cp.call(alice.key, 'GET', '/notifications?category=support')).json<{
        notifications: Array<{ kind: string; title: string; domain: string; data: { ticket_id: number } }>;
      }>();
      assert.deepEqual(
        feed.notifications.map((n) => [n.kind, n.data.ticket_id, n.domain]),
        [
          ['support.reply', id, name],
          ['support.reply', id, name],
        ],
      );
      // A read-only key may read the ticket; reading it marks the replies read.
      const read = await cp.call(readOnly.key, 'GET', `/support/tickets/${id}`);
      assert.equal(read.statusCode, 200);
      const body = read.json<WithMessages>();
      assert.deepEqual([body.ticket.status, body.ticket.unread_replies, body.ticket.message_count], ['answered', 0, 3]);
      assert.deepEqual(
        body.messages.map((m) => [m.author, m.author_name]),
        [
          ['user', ''],
          ['support', 'Sam'],
          ['support', 'Support'],
        ],
      );
      assert.deepEqual((await cp.call(alice.key, 'GET', '/support/tickets/unread-count')).json(), {
        tickets: 0,
        replies: 0,
      });
      const shown = await admin('support', 'show', String(id));
      assert.equal(shown[0], `#${id} answered: Records do not resolve`);
      assert.equal(shown[1], `from ${alice.email} about ${name}`);
    },
  );

  await t.test('the author replies: the ticket is open again; a read-only key cannot reply or open', async () => {
    const res = await cp.call(alice.key, 'POST', `/support/tickets/${id}/replies`, { body: 'Fixed the NS, thanks' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<WithMessages>();
    assert.deepEqual([body.ticket.status, body.messages.at(-1)?.body], ['open', 'Fixed the NS, thanks']);
    for (const [url, payload] of [
      [`/support/tickets/${id}/replies`, { body: 'x' }],
      ['/support/tickets', { subject: 's', body: 'b' }],
    ] as const) {
      const ro = await cp.call(readOnly.key, 'POST', url, payload);
      assert.deepEqual([ro.statusCode, ro.json()], [403, { error: 'read-only API key' }]);
    }
  });

  await t.test('support closes: no more replies (400), the author is notified', async () => {
    assert.deepEqual(await admin('support', 'close', String(id)), [`ticket #${id} is closed`]);
    const res = await cp.call(alice.key, 'POST', `/support/tickets/${id}/replies`, { body: 'one more thing' });
    assert.deepEqual([res.statusCode, res.json()], [400, { error: `ticket ${id} is closed: open a new ticket` }]);
    await assert.rejects(admin('support', 'reply', String(id), 'late'), {
      message: `ticket ${id} is closed: open a new ticket`,
    });
    const ticket = (await cp.call(alice.key, 'GET', `/support/tickets/${id}`)).json<WithMessages>().ticket;
    assert.equal(ticket.status, 'closed');
    assert.ok(ticket.closed_at);
    const [n] = (await cp.call(alice.key, 'GET', '/notifications?category=support&limit=1')).json().notifications;
    assert.equal(n.kind, 'support.closed');
    assert.deepEqual(
      await admin('support', 'close', String(id)),
      [`ticket #${id} is closed`],
      'closing again is harmless',
    );
  });

  await t.test('admin command line: bad arguments are usage errors, unknown tickets not found', async () => {
    await assert.rejects(admin('support', 'show', 'x'), UsageError);
    await assert.rejects(admin('support', 'show', '0'), UsageError);
    await assert.rejects(admin('support', 'reply', String(id)), UsageError);
    await assert.rejects(admin('support', 'reply', '999999', ' '), UsageError);
    await assert.rejects(admin('support', 'reply', '999999', 'x'.repeat(MAX_MESSAGE_CHARS + 1)), UsageError);
    await assert.rejects(admin('support', 'list', '--status', 'weird'), UsageError);
    await assert.rejects(admin('support', 'show', '999999'), { message: 'no ticket 999999' });
    await assert.rejects(admin('support', 'close', '999999'), { message: 'no ticket 999999' });
  });

  await t.test('bad input is 400 with an error text and stores nothing', async () => {
    const before = (await db.select().from(supportTickets)).length;
    for (const body of [
      {},
      { subject: 's' },
      { body: 'b' },
      { subject: '', body: 'b' },
      { subject: '   ', body: 'b' },
      { subject: 'a\nb', body: 'b' },
      { subject: 'tab\there', body: 'b' },
      { subject: 'x'.repeat(MAX_SUBJECT_CHARS + 1), body: 'b' },
      { subject: 's', body: '' },
      { subject: 's', body: ' \n ' },
      { subject: 's', body: 'a\u0000b' },
      { subject: 's', body: 'x'.repeat(MAX_MESSAGE_CHARS + 1) },
      { subject: 's', body: 'b', domain: '' },
      { subject: 's', body: 'b', domain: 'x'.repeat(301) },
      { subject: 's', body: 'b', priority: 'urgent' },
      { subject: 1, body: 'b' },
      ['s', 'b'],
    ]) {
      const res = await cp.call(alice.key, 'POST', '/support/tickets', body);
      assert.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 60));
      assert.equal(typeof res.json().error, 'string');
    }
    assert.equal((await db.select().from(supportTickets)).length, before);
    const open = (await cp.call(alice.key, 'GET', '/support/tickets')).json().tickets[0].id as number;
    for (const body of [
      {},
      { body: '' },
      { body: 'x'.repeat(MAX_MESSAGE_CHARS + 1) },
      { body: 'b', extra: 1 },
      { body: 'S\ud995\udc78\u0000\u00ee' },
    ]) {
      const res = await cp.call(alice.key, 'POST', `/support/tickets/${open}/replies`, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 60));
    }
    // Linear however long: a message of spaces with a NUL at its end is refused at once.
    const spaced = await cp.call(alice.key, 'POST', `/support/tickets/${open}/replies`, {
      body: `${' '.repeat(MAX_MESSAGE_CHARS - 2)}x\u0000`,
    });
    assert.match(spaced.json().error, /NUL/);
    for (const q of ['limit=0', 'limit=101', 'cursor=x', 'status=pending', 'other=1'])
      assert.equal((await cp.call(alice.key, 'GET', `/support/tickets?${q}`)).statusCode, 400, q);
    for (const path of ['/support/tickets/0', '/support/tickets/99999999999'])
      assert.equal((await cp.call(alice.key, 'GET', path)).statusCode, 400, path);
    assert.equal((await cp.call(alice.key, 'GET', '/support/tickets/abc')).statusCode, 404);
    const accepted = await cp.call(alice.key, 'POST', '/support/tickets', {
      subject: 'x'.repeat(MAX_SUBJECT_CHARS),
      body: 'y'.repeat(MAX_MESSAGE_CHARS),
    });
    assert.equal(accepted.statusCode, 200, 'the bounds themselves are accepted');
  });

  await t.test(
    `at most ${MAX_MESSAGES_PER_TICKET} messages per ticket and ${MAX_OPEN_TICKETS} open tickets`,
    async () => {
      const full = (
        await cp.call(alice.key, 'POST', '/support/tickets', { subject: 'long', body: 'b' })
      ).json<WithMessages>().ticket.id;
      await db.execute(
        sql`UPDATE support_tickets SET message_count = ${MAX_MESSAGES_PER_TICKET - 1} WHERE id = ${full}`,
      );
      assert.equal(
        (await cp.call(alice.key, 'POST', `/support/tickets/${full}/replies`, { body: 'last' })).statusCode,
        200,
      );
      const over = await cp.call(alice.key, 'POST', `/support/tickets/${full}/replies`, { body: 'one too many' });
      assert.equal(over.statusCode, 400);
      assert.match(over.json().error, /holds 200 messages, the most a ticket may/);
      await assert.rejects(admin('support', 'reply', String(full), 'x'), /holds 200 messages/);

      const openNow = (await db.select().from(supportTickets).where(eq(supportTickets.userId, alice.id))).filter(
        (x) => x.status !== 'closed',
      ).length;
      for (let i = openNow; i < MAX_OPEN_TICKETS; i++)
        assert.equal(
          (await cp.call(alice.key, 'POST', '/support/tickets', { subject: `t${i}`, body: 'b' })).statusCode,
          200,
        );
      const refused = await cp.call(alice.key, 'POST', '/support/tickets', { subject: 'one more', body: 'b' });
      assert.equal(refused.statusCode, 400);
      assert.match(refused.json().error, /you have 20 open tickets, the most an account may have/);
      await admin('support', 'close', String(full));
      assert.equal(
        (await cp.call(alice.key, 'POST', '/support/tickets', { subject: 'now', body: 'b' })).statusCode,
        200,
      );
      // Another account has its own allowance.
      assert.equal(
        (await cp.call(bob.key, 'POST', '/support/tickets', { subject: 'mine', body: 'b' })).statusCode,
        200,
      );
    },
  );
});
