// Hold and retry of email routing (issue 18) through real processes: the control plane and the workflows worker with
// a Temporal dev server (the workflow harness), the mail node as its own process, a stub DNS and the sink standing in
// for the destinations' MX. A destination answering 4xx: the mail node accepts (250), the message is held sealed and
// the `retryHeldEmail` workflow retries it on its schedule; every attempt and the end is in the activity log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startLifecycle, eventually } from '../helpers/workflows-harness.js';
import { startStubDns } from '../helpers/stub-dns.js';
import { routeDomain, sendMail, startMailNodeProcess, startSink, type ApiCall } from './email-harness.js';

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    const st = statSync(p);
    return st.isDirectory() ? filesUnder(p) : st.isFile() ? [p] : [];
  });
}

type Entry = { action: string; reason: string; rcpt_to: string; destination: string; smtp_response: string };

test(
  'a deferred message is held and retried by a workflow: delivered on retry, bounced when the budget ends, kept across restarts',
  { timeout: 300_000 },
  async (t) => {
    const dns = await startStubDns();
    const sink = await startSink();
    t.after(() => sink.close());
    const L = await startLifecycle(
      'email-retry',
      {
        MAIL_RESOLVERS: dns.address,
        MAIL_DELIVERY_PORT: String(sink.port),
        ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
        // Four attempts in all: the mail node's, then three retries 1, 2 and 2 seconds apart.
        MAIL_RETRY_DELAYS_SECONDS: '1,2,2',
      },
      { dns },
    );
    t.after(() => L.close());
    const node = await startMailNodeProcess(t, {
      NODE_TOKEN: ensureNodeToken(L.dataDir),
      MAIL_RESOLVERS: dns.address,
      MAIL_DELIVERY_PORT: String(sink.port),
      ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
      CONTROL_PLANE_URL: L.apiUrl,
    });
    const call: ApiCall = async (key, method, path, body) => {
      if (key === 'owner') {
        const r = await L.api(method, path, body);
        return { status: r.status, text: JSON.stringify(r.body) };
      }
      const r = await fetch(`${L.apiUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, text: await r.text() };
    };
    const route = async (domain: string, destination: string) => {
      assert.equal((await L.api('POST', '/domains/', { name: domain })).status, 200);
      await routeDomain(call, dns, sink, domain, destination, 'info');
    };
    await route('held-mail.test', 'hank@dest.test');
    await route('bounce-mail.test', 'ivy@dest.test');
    await route('refuse-mail.test', 'jill@dest.test');
    const activity = async (domain: string) =>
      (await L.api<{ entries: Entry[] }>('GET', `/domains/${domain}/email/activity`)).body.entries.reverse();

    // 1. Two 4xx, then accepted: delivered on the third attempt (the second retry).
    sink.plan.set('hank@dest.test', [451, 451]);
    // 2. 4xx on every attempt: bounced after the fourth.
    sink.plan.set('ivy@dest.test', [451, 451, 451, 451, 451, 451]);
    // 3. 4xx, then 5xx: bounced on the second attempt (a 5xx is a bounce).
    sink.plan.set('jill@dest.test', [451, 550]);
    const marker = `held-marker-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const sent = await Promise.all([
      sendMail(node.mailPort, { from: 'x@sender.test', to: 'info@held-mail.test', text: `${marker} one` }),
      sendMail(node.mailPort, { from: 'x@sender.test', to: 'info@bounce-mail.test', text: `${marker} two` }),
      sendMail(node.mailPort, { from: 'x@sender.test', to: 'info@refuse-mail.test', text: `${marker} three` }),
    ]);
    for (const s of sent) assert.match(s.response, /^250 .*held for retry/);
    // Held, the content is nowhere in plain form: not in the control plane's data (PGlite's files with the default
    // test database) nor on the mail node's disk.
    for (const f of [...filesUnder(L.dataDir), ...filesUnder(node.mailDataDir)])
      assert.ok(!readFileSync(f).includes(marker), `${f} holds the content in plain form`);

    const delivered = await sink.next('hank@dest.test', (m) => m.raw.includes(`${marker} one`), 90_000);
    assert.match(delivered.mailFrom, /^SRS0=.*=sender\.test=x@held-mail\.test$/);
    assert.match(delivered.raw.toString(), /^DKIM-Signature: .*d=held-mail\.test/ms);
    const done = (domain: string) =>
      eventually(
        `the end of ${domain}'s held message in its activity log`,
        async () => {
          const entries = await activity(domain);
          return entries.some((e) => e.action === 'forwarded' || e.action === 'bounced') ? entries : undefined;
        },
        120_000,
      );
    const one = await done('held-mail.test');
    assert.deepEqual(
      one.map((e) => `${e.action}: ${e.reason}`),
      [
        'deferred: attempt 1 of 4: the destination answered with a temporary failure; held for retry, next attempt in 1 s',
        'deferred: attempt 2 of 4: temporary failure; next attempt in 2 s',
        'forwarded: delivered on attempt 3 of 4 (held for retry)',
      ],
    );
    assert.match(one[0]!.smtp_response, /451/);
    assert.equal(one[2]!.destination, 'hank@dest.test');

    const two = await done('bounce-mail.test');
    assert.deepEqual(
      two.map((e) => e.action),
      ['deferred', 'deferred', 'deferred', 'bounced'],
    );
    assert.equal(two[3]!.reason, 'bounced after 4 attempts: the destination kept answering with a temporary failure');
    assert.ok(!sink.messages.some((m) => m.raw.includes(`${marker} two`)));

    const three = await done('refuse-mail.test');
    assert.deepEqual(
      three.map((e) => `${e.action}: ${e.reason}`),
      [
        'deferred: attempt 1 of 4: the destination answered with a temporary failure; held for retry, next attempt in 1 s',
        'bounced: attempt 2 of 4: the destination refused the message',
      ],
    );
    assert.match(three[1]!.smtp_response, /550/);
    // The log holds metadata only; delivered and bounced messages are no longer held.
    for (const d of ['held-mail.test', 'bounce-mail.test', 'refuse-mail.test'])
      assert.ok(!JSON.stringify(await activity(d)).includes(marker));
    const counts = (await L.api<{ today: { forwards: number } }>('GET', '/domains/bounce-mail.test/email/counts')).body;
    assert.equal(counts.today.forwards, 0, 'a bounced forward gives its daily count back');

    // 4. A held message survives restarts: the worker killed and the control plane restarted while it waits, the
    // destination refusing until both are done; the retry after them is delivered (the message from the database,
    // the schedule from Temporal).
    sink.plan.set('hank@dest.test', new Array<number>(50).fill(451));
    const again = await sendMail(node.mailPort, {
      from: 'x@sender.test',
      to: 'info@held-mail.test',
      text: `${marker} four`,
    });
    assert.match(again.response, /held for retry/);
    await L.stopWorker('SIGKILL');
    await L.restartControlPlane();
    sink.plan.delete('hank@dest.test');
    await L.startWorker();
    await sink.next('hank@dest.test', (m) => m.raw.includes(`${marker} four`), 120_000);
    const after = await eventually('the retried message in the log', async () => {
      const entries = await activity('held-mail.test');
      return entries.filter((e) => e.action === 'forwarded').length === 2 ? entries : undefined;
    });
    assert.match(after[after.length - 1]!.reason, /^delivered on attempt [234] of 4 \(held for retry\)$/);
  },
);
