// Email routing end to end through real processes (issue 18): SMTP to the mail node for a custom address, forwarded to
// the sink standing in for the destination's MX with an SRS envelope sender and a DKIM signature mailauth verifies;
// refused recipients, unverified destinations, the daily limit, a 4xx then accept (the sender's retry), a 5xx bounce;
// and nothing of the content on disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { Resolver } from 'node:dns/promises';
import { startEmailHarness } from './email-harness.js';

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    if (s.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

const TIMEOUT = { timeout: 240_000 };

test(
  'a message to a custom address reaches the destination MX: SRS sender, DKIM that verifies, nothing on disk',
  TIMEOUT,
  async (t) => {
    const h = await startEmailHarness(t);
    const { key } = await h.routedDomain('routed-mail.test', 'alice@dest.test');
    const marker = `content-marker-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const sent = await h.send({ from: 'bob@sender.test', to: 'info@routed-mail.test', subject: 'hi', text: marker });
    assert.match(sent.response, /^250 /);
    const m = await h.sink.next('alice@dest.test', (x) => x.raw.includes(marker));
    assert.match(m.mailFrom, /^SRS0=[^=]{4}=[A-Z2-7]{2}=sender\.test=bob@routed-mail\.test$/);
    const resolver = new Resolver();
    resolver.setServers([h.dns.address]);
    const verdict = await dkimVerify(m.raw, {
      resolver: (name: string, rr: string) => resolver.resolve(name, rr as 'TXT'),
    });
    const ours = verdict.results.find((r: { signingDomain?: string }) => r.signingDomain === 'routed-mail.test');
    assert.ok(ours, `no DKIM signature of routed-mail.test: ${JSON.stringify(verdict.results)}`);
    assert.equal(ours.status.result, 'pass', JSON.stringify(ours.status));
    assert.match(m.raw.toString(), /^ARC-Seal: i=1;/m);
    // The activity log holds the metadata, not the content.
    type Log = { entries: Array<{ action: string; rcpt_to: string; destination: string }> };
    const read = async () => (await h.cp.call(key, 'GET', '/domains/routed-mail.test/email/activity')).json<Log>();
    const deadline = Date.now() + 30_000;
    let log = await read();
    while (!log.entries.some((e) => e.action === 'forwarded') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      log = await read();
    }
    const forwarded = log.entries.find((e) => e.action === 'forwarded');
    assert.ok(forwarded, JSON.stringify(log));
    assert.equal(forwarded.destination, 'alice@dest.test');
    assert.ok(!JSON.stringify(log).includes(marker));
    // Nothing of the message is on the mail node's disk.
    for (const f of filesUnder(h.mailDataDir)) assert.ok(!readFileSync(f).includes(marker), `${f} holds the content`);
    const counts = (await h.cp.call(key, 'GET', '/domains/routed-mail.test/email/counts')).json<{
      today: { forwards: number };
    }>();
    assert.equal(counts.today.forwards, 1);
  },
);

test('refused recipients, unverified destinations, disabled addresses and the catch-all', TIMEOUT, async (t) => {
  const h = await startEmailHarness(t);
  const { key } = await h.routedDomain('refusing.test', 'carol@dest.test');
  // No such address: 550 at RCPT, logged.
  await assert.rejects(
    h.send({ from: 'x@sender.test', to: 'nobody@refusing.test' }),
    (err: { responseCode?: number; response?: string }) => {
      assert.equal(err.responseCode, 550);
      assert.match(err.response ?? '', /no such address/);
      return true;
    },
  );
  // A domain without email routing: 550.
  await assert.rejects(h.send({ from: 'x@sender.test', to: 'info@elsewhere.test' }), { responseCode: 550 });
  // An address whose destination is not verified: 550.
  const add = await h.cp.call(key, 'POST', '/domains/refusing.test/email/addresses/', {
    address: 'sales',
    destination: 'unverified@dest.test',
  });
  assert.equal(add.statusCode, 200, add.body);
  assert.equal(add.json<{ destination_verified: boolean }>().destination_verified, false);
  await assert.rejects(
    h.send({ from: 'x@sender.test', to: 'sales@refusing.test' }),
    (err: { responseCode?: number; response?: string }) => {
      assert.equal(err.responseCode, 550);
      assert.match(err.response ?? '', /not verified/);
      return true;
    },
  );
  // A disabled address: 550; enabled again: accepted.
  const list = (await h.cp.call(key, 'GET', '/domains/refusing.test/email/addresses/')).json<{
    addresses: Array<{ id: number; address: string }>;
  }>();
  const info = list.addresses.find((a) => a.address === 'info@refusing.test')!;
  assert.equal(
    (await h.cp.call(key, 'POST', `/domains/refusing.test/email/addresses/${info.id}/disable`)).statusCode,
    200,
  );
  await assert.rejects(h.send({ from: 'x@sender.test', to: 'info@refusing.test' }), { responseCode: 550 });
  // The catch-all forwards what has no address of its own.
  const ca = await h.cp.call(key, 'PUT', '/domains/refusing.test/email/catch-all', {
    enabled: true,
    action: 'forward',
    destination: 'carol@dest.test',
  });
  assert.equal(ca.statusCode, 200, ca.body);
  const r = await h.send({ from: 'x@sender.test', to: 'anything@refusing.test', text: 'caught' });
  assert.match(r.response, /^250/);
  await h.sink.next('carol@dest.test', (m) => m.raw.includes('caught'));
  const log = (await h.cp.call(key, 'GET', '/domains/refusing.test/email/activity')).json<{
    entries: Array<{ action: string; reason: string }>;
  }>();
  assert.ok(log.entries.some((e) => e.action === 'refused' && /no such address/.test(e.reason)));
  assert.ok(log.entries.some((e) => e.action === 'refused' && /not verified/.test(e.reason)));
});

test(
  '4xx from the destination: the sender is told 451 and its retry is delivered; 5xx: 550 back to the sender (it bounces)',
  TIMEOUT,
  async (t) => {
    const h = await startEmailHarness(t);
    const { key } = await h.routedDomain('retry.test', 'dave@dest.test');
    h.sink.plan.set('dave@dest.test', [451]);
    await assert.rejects(h.send({ from: 'x@sender.test', to: 'info@retry.test', text: 'first try' }), {
      responseCode: 451,
    });
    const again = await h.send({ from: 'x@sender.test', to: 'info@retry.test', text: 'second try' });
    assert.match(again.response, /^250/);
    await h.sink.next('dave@dest.test', (m) => m.raw.includes('second try'));
    h.sink.plan.set('dave@dest.test', [550]);
    await assert.rejects(
      h.send({ from: 'x@sender.test', to: 'info@retry.test', text: 'refused' }),
      (err: { responseCode?: number; response?: string }) => {
        assert.equal(err.responseCode, 550);
        assert.match(err.response ?? '', /destination refused/);
        return true;
      },
    );
    // The mail node records activity after it answers the sender: the log catches up shortly after.
    const actions = async () =>
      (await h.cp.call(key, 'GET', '/domains/retry.test/email/activity'))
        .json<{ entries: Array<{ action: string }> }>()
        .entries.map((e) => e.action)
        .filter((a) => a !== 'refused');
    const deadline = Date.now() + 30_000;
    while ((await actions()).length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await actions(), ['bounced', 'forwarded', 'deferred']);
    // Only the delivered message counts against the day.
    const counts = (await h.cp.call(key, 'GET', '/domains/retry.test/email/counts')).json<{
      today: { forwards: number };
    }>();
    assert.equal(counts.today.forwards, 1);
  },
);

test('the daily forward limit: the message beyond it is deferred with 451', TIMEOUT, async (t) => {
  const h = await startEmailHarness(t);
  await h.routedDomain('limited.test', 'erin@dest.test');
  const { sql } = await import('drizzle-orm');
  await h.cp.database.db
    .execute(sql`UPDATE subscriptions SET overrides = overrides || '{"max_email_forwards_per_day": 2}'::jsonb
    WHERE domain_id = (SELECT id FROM domains WHERE name = 'limited.test')`);
  for (let i = 0; i < 2; i++)
    assert.match((await h.send({ from: 'x@sender.test', to: 'info@limited.test' })).response, /^250/);
  await assert.rejects(
    h.send({ from: 'x@sender.test', to: 'info@limited.test' }),
    (err: { responseCode?: number; response?: string }) => {
      assert.equal(err.responseCode, 451);
      assert.match(err.response ?? '', /daily forward limit/);
      return true;
    },
  );
});

test(
  'abuse: oversized messages, many recipients, long addresses and mail loops are refused before any work',
  TIMEOUT,
  async (t) => {
    const h = await startEmailHarness(t, { MAIL_MAX_MESSAGE_BYTES: '65536' });
    await h.routedDomain('abuse.test', 'frank@dest.test');
    const big = `From: x@sender.test\r\nTo: info@abuse.test\r\nSubject: big\r\n\r\n${'a'.repeat(70_000)}\r\n`;
    await assert.rejects(h.send({ from: 'x@sender.test', to: 'info@abuse.test', raw: big }), { responseCode: 552 });
    const long = `${'a'.repeat(300)}@abuse.test`;
    await assert.rejects(h.send({ from: 'x@sender.test', to: long }), (err: { responseCode?: number }) => {
      assert.ok(err.responseCode && err.responseCode >= 500);
      return true;
    });
    const loop = `${'Received: from a by b; Thu, 1 Jan 2026 00:00:00 +0000\r\n'.repeat(40)}From: x@sender.test\r\nTo: info@abuse.test\r\nSubject: loop\r\n\r\nloop\r\n`;
    await assert.rejects(h.send({ from: 'x@sender.test', to: 'info@abuse.test', raw: loop }), { responseCode: 554 });
    // A second recipient in one transaction is deferred (452), the first still goes.
    const nodemailer = (await import('nodemailer')).default;
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: h.mailPort,
      tls: { rejectUnauthorized: false },
    });
    const info = await transport.sendMail({
      from: 'x@sender.test',
      to: ['info@abuse.test', 'other@abuse.test'],
      text: 'two',
    });
    transport.close();
    assert.deepEqual(info.accepted, ['info@abuse.test']);
    assert.equal(info.rejected.length, 1);
  },
);

test(
  'DNS: enable publishes MX, SPF and DKIM (locked: the records API refuses them with 409), check, unlock, disable removes them',
  TIMEOUT,
  async (t) => {
    const { startTestControlPlane } = await import('../helpers/control-plane.js');
    // No DNS leaves the machine: the verification mails' MX lookups go to a port nothing answers.
    const cp = await startTestControlPlane(t, { MAIL_RESOLVERS: '127.0.0.1:9' });
    const u = await cp.user();
    await cp.domain(u.key, 'dns-mail.test');
    const on = await cp.call(u.key, 'POST', '/domains/dns-mail.test/email/enable');
    assert.equal(on.statusCode, 200, on.body);
    const status = on.json<{
      records: Array<{ name: string; type: string; destination: string }>;
      suggested_records: unknown[];
    }>();
    assert.deepEqual(
      status.records.map((r) => `${r.type} ${r.name}`),
      ['MX @', 'MX @', 'TXT @', `TXT ${status.records[3]!.name}`],
    );
    assert.match(status.records[3]!.name, /^er\d{6}\._domainkey$/);
    assert.match(status.records[3]!.destination, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+$/);
    assert.equal(status.suggested_records.length, 1);
    const records = (await cp.call(u.key, 'GET', '/domains/dns-mail.test/records/')).json<
      Array<{ id: number; type: string; name: string; destination: string }>
    >();
    const mx = records.find((r) => r.type === 'MX')!;
    assert.ok(mx);
    // Locked: update, delete and the bulk forms are refused.
    const put = await cp.call(u.key, 'PUT', `/domains/dns-mail.test/records/${mx.id}`, {
      destination: 'mx.elsewhere.test',
    });
    assert.equal(put.statusCode, 409, put.body);
    assert.match(put.json<{ error: string }>().error, /managed by email routing and locked/);
    assert.equal((await cp.call(u.key, 'DELETE', `/domains/dns-mail.test/records/${mx.id}`)).statusCode, 409);
    const many = await cp.call(u.key, 'POST', '/domains/dns-mail.test/records/delete-many', { ids: [mx.id] });
    assert.equal(many.json<{ failed: number }>().failed, 1);
    // Check against our own zone.
    const check = await cp.call(u.key, 'POST', '/domains/dns-mail.test/email/check');
    assert.equal(check.statusCode, 200, check.body);
    assert.equal(check.json<{ ok: boolean }>().ok, true);
    // Unlocked: the records API may change them.
    assert.equal((await cp.call(u.key, 'POST', '/domains/dns-mail.test/email/unlock')).statusCode, 200);
    const put2 = await cp.call(u.key, 'PUT', `/domains/dns-mail.test/records/${mx.id}`, { ttl: 600 });
    assert.equal(put2.statusCode, 200, put2.body);
    // Disable removes every managed record.
    assert.equal((await cp.call(u.key, 'POST', '/domains/dns-mail.test/email/disable')).statusCode, 200);
    const after = (await cp.call(u.key, 'GET', '/domains/dns-mail.test/records/')).json<Array<{ type: string }>>();
    assert.equal(after.filter((r) => r.type === 'MX' || r.type === 'TXT').length, 0);
    // An apex MX of the owner's own: enable is a conflict.
    const own = await cp.call(u.key, 'POST', '/domains/dns-mail.test/records/', {
      name: '@',
      type: 'MX',
      destination: 'mx.own.test',
    });
    assert.equal(own.statusCode, 200, own.body);
    assert.equal((await cp.call(u.key, 'POST', '/domains/dns-mail.test/email/enable')).statusCode, 409);
  },
);

test('API input bounds: addresses, destinations and tokens are checked before any work', TIMEOUT, async (t) => {
  const { startTestControlPlane } = await import('../helpers/control-plane.js');
  // No DNS leaves the machine: the verification mails' MX lookups go to a port nothing answers.
  const cp = await startTestControlPlane(t, { MAIL_RESOLVERS: '127.0.0.1:9' });
  const u = await cp.user();
  await cp.domain(u.key, 'bounds-mail.test');
  assert.equal((await cp.call(u.key, 'POST', '/domains/bounds-mail.test/email/enable')).statusCode, 200);
  const cases: Array<[string, string, unknown, RegExp]> = [
    [
      'POST',
      '/domains/bounds-mail.test/email/addresses/',
      { address: 'a'.repeat(65), destination: 'x@dest.test' },
      /local part must be 1 to 64/,
    ],
    [
      'POST',
      '/domains/bounds-mail.test/email/addresses/',
      { address: 'a b', destination: 'x@dest.test' },
      /not a valid local part/,
    ],
    [
      'POST',
      '/domains/bounds-mail.test/email/addresses/',
      { address: 'a@other.test', destination: 'x@dest.test' },
      /must be at bounds-mail.test/,
    ],
    [
      'POST',
      '/domains/bounds-mail.test/email/addresses/',
      { address: 'a', destination: 'x@127.0.0.1' },
      /not a domain name/,
    ],
    [
      'POST',
      '/domains/bounds-mail.test/email/addresses/',
      { address: 'a', destination: `${'x'.repeat(300)}@d.test` },
      /at most 254/,
    ],
    ['POST', '/email/destinations', { email: 'no-at-sign' }, /not an email address/],
    ['POST', '/email/destinations/verify', { token: 'x'.repeat(201) }, /at most 200/],
    [
      'POST',
      '/email/destinations/verify',
      { token: '1.99999999999.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' },
      /invalid or already used/,
    ],
  ];
  for (const [method, url, body, error] of cases) {
    const r = await cp.call(method === 'POST' && url.endsWith('verify') ? null : u.key, method as 'POST', url, body);
    assert.equal(r.statusCode, 400, `${url} ${JSON.stringify(body).slice(0, 80)}: ${r.body}`);
    assert.match(r.json<{ error: string }>().error, error);
  }
  // The plan's max_email_rules: the free plan allows 5.
  for (let i = 0; i < 5; i++)
    assert.equal(
      (
        await cp.call(u.key, 'POST', '/domains/bounds-mail.test/email/addresses/', {
          address: `a${i}`,
          destination: 'x@dest.test',
        })
      ).statusCode,
      200,
    );
  const over = await cp.call(u.key, 'POST', '/domains/bounds-mail.test/email/addresses/', {
    address: 'a5',
    destination: 'x@dest.test',
  });
  assert.equal(over.statusCode, 403, over.body);
  assert.match(over.json<{ error: string }>().error, /max_email_rules/);
  // Sending needs the plan's email_sending_enabled (the free plan has none).
  const send = await cp.call(u.key, 'POST', '/domains/bounds-mail.test/email/send', {
    from: 'a0',
    to: 'x@dest.test',
    subject: 's',
    text: 't',
  });
  assert.equal(send.statusCode, 403, send.body);
});
