// Email routing through real processes: the control plane (in-process app listening on loopback), the mail node as
// its own process (`mail-node/src/main.ts`), a stub DNS on 127.0.0.1 that points destination domains' MX at the
// sink, and the sink: an smtp-server on 127.0.0.1 standing in for the destination's MX, which keeps what it received
// in memory and can answer 4xx or 5xx on demand.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import nodemailer from 'nodemailer';
import { startTestControlPlane, type TestControlPlane } from '../helpers/control-plane.js';
import { startStubDns, type StubDns } from '../helpers/stub-dns.js';
import { ScriptProcess } from '../helpers/child-process.js';

export interface SinkMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
}

export interface Sink {
  port: number;
  messages: SinkMessage[];
  /** The next answers to DATA for `rcpt` (e.g. [451] once, or [550]); empty: 250. */
  plan: Map<string, number[]>;
  /** Resolves with the next message to `rcpt` (or the first already there that `match` accepts). */
  next(rcpt: string, match?: (m: SinkMessage) => boolean, timeoutMs?: number): Promise<SinkMessage>;
  close(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  const messages: SinkMessage[] = [];
  const plan = new Map<string, number[]>();
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const rcptTo = session.envelope.rcptTo.map((r) => r.address);
        const answers = plan.get(rcptTo[0]!);
        const code = answers?.shift();
        if (code && code >= 400)
          return callback(
            Object.assign(new Error(`${code >= 500 ? '5.1.1 no such user' : '4.2.1 try later'}`), {
              responseCode: code,
            }),
          );
        messages.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo,
          raw: Buffer.concat(chunks),
        });
        for (const w of waiters.splice(0)) w();
        callback();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    messages,
    plan,
    async next(rcpt, match = () => true, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = messages.find((m) => m.rcptTo.includes(rcpt) && match(m));
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no message to ${rcpt} reached the sink within ${timeoutMs} ms`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export interface EmailHarness {
  cp: TestControlPlane;
  dns: StubDns;
  sink: Sink;
  mailNode: ScriptProcess;
  mailPort: number;
  mailDataDir: string;
  /** An SMTP client session to the mail node: sends one message, answers nodemailer's info or throws its error. */
  send(opts: {
    from: string;
    to: string;
    subject?: string;
    text?: string;
    raw?: string;
  }): Promise<{ response: string }>;
  /** A user, a managed domain with email routing on, a verified destination and one custom address. */
  routedDomain(name: string, destination: string, local?: string): Promise<{ key: string; userId: number }>;
  /** Publishes the domain's DKIM record in the stub DNS (what the sink's verifier asks). */
  publishDkim(domain: string, key: string): Promise<void>;
}

export async function startEmailHarness(
  t: { after(fn: () => Promise<void> | void): void },
  env: Record<string, string> = {},
): Promise<EmailHarness> {
  const dns = await startStubDns();
  t.after(() => dns.close());
  const sink = await startSink();
  t.after(() => sink.close());
  const nodeToken = 'email-test-node-token-0123456789';
  const mailEnv = {
    NODE_TOKEN: nodeToken,
    MAIL_RESOLVERS: dns.address,
    MAIL_DELIVERY_PORT: String(sink.port),
    ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
  };
  const cp = await startTestControlPlane(t, { ...mailEnv, ...env });
  await cp.app.listen({ host: '127.0.0.1', port: 0 });
  const apiPort = (cp.app.server.address() as { port: number }).port;
  const { mailNode, mailPort, mailDataDir } = await startMailNodeProcess(t, {
    ...mailEnv,
    CONTROL_PLANE_URL: `http://127.0.0.1:${apiPort}`,
    ...env,
  });

  const harness: EmailHarness = {
    cp,
    dns,
    sink,
    mailNode,
    mailPort,
    mailDataDir,
    send: (opts) => sendMail(mailPort, opts),
    async routedDomain(name, destination, local = 'info') {
      const u = await cp.user();
      await cp.domain(u.key, name);
      const call: ApiCall = async (key, method, path, body) => {
        const res = await cp.call(key === 'owner' ? u.key : null, method as 'GET', path, body);
        return { status: res.statusCode, text: res.body };
      };
      await routeDomain(call, dns, sink, name, destination, local);
      return { key: u.key, userId: u.id };
    },
    async publishDkim(domain, key) {
      await publishDkim(
        async (_k, method, path) => {
          const res = await cp.call(key, method as 'GET', path);
          return { status: res.statusCode, text: res.body };
        },
        dns,
        domain,
      );
    },
  };
  return harness;
}

/** A call of the public API as the domain's owner (`owner`) or without a key (null): status and body text. */
export type ApiCall = (
  key: 'owner' | null,
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; text: string }>;

/** Starts the mail node as its own process on a free port; stopped and its data dir removed after the test. */
export async function startMailNodeProcess(
  t: { after(fn: () => Promise<void> | void): void },
  env: Record<string, string>,
): Promise<{ mailNode: ScriptProcess; mailPort: number; mailDataDir: string }> {
  const mailDataDir = mkdtempSync(join(tmpdir(), 'mail-node-'));
  t.after(() => rmSync(mailDataDir, { recursive: true, force: true }));
  const mailNode = new ScriptProcess('mail-node/src/main.ts', () => ({
    DATA_DIR: mailDataDir,
    MAIL_PORT: '0',
    MAIL_LOOKUP_CACHE_MS: '0',
    ...env,
    LOG_LEVEL: 'info',
  }));
  mailNode.start();
  t.after(() => mailNode.stop());
  const deadline = Date.now() + 60_000;
  let mailPort = 0;
  while (!mailPort) {
    const m = /"port":(\d+)[^\n]*"msg":"mail node listening"/.exec(mailNode.out);
    if (m) mailPort = Number(m[1]);
    else if (!mailNode.running || Date.now() > deadline)
      throw new Error(`the mail node did not start:\n${mailNode.out}`);
    else await new Promise((r) => setTimeout(r, 100));
  }
  return { mailNode, mailPort, mailDataDir };
}

/**
 * On an existing managed domain: email routing on (its DKIM record into the stub DNS), the destination's MX at the
 * sink, the destination added and verified from the link the sink received, and the custom address `local`.
 */
export async function routeDomain(
  call: ApiCall,
  dns: StubDns,
  sink: Sink,
  name: string,
  destination: string,
  local: string,
): Promise<void> {
  const ok = async (what: string, method: string, path: string, body?: unknown, key: 'owner' | null = 'owner') => {
    const r = await call(key, method, path, body);
    if (r.status !== 200) throw new Error(`${what}: ${r.status} ${r.text}`);
  };
  await ok('enable', 'POST', `/domains/${name}/email/enable`);
  await publishDkim(call, dns, name);
  const destDomain = destination.slice(destination.indexOf('@') + 1);
  dns.set(destDomain, 'MX', [`10 mx.${destDomain}`]);
  dns.set(`mx.${destDomain}`, 'A', ['127.0.0.1']);
  await ok('destination', 'POST', '/email/destinations', { email: destination });
  const mail = await sink.next(destination, (m) => m.raw.includes('X-Email-Routing-Verify'));
  const token = /X-Email-Routing-Verify: (\S+)/.exec(mail.raw.toString())![1]!;
  await ok('verify', 'POST', '/email/destinations/verify', { token }, null);
  await ok('address', 'POST', `/domains/${name}/email/addresses/`, { address: local, destination });
}

/** Publishes the domain's DKIM record in the stub DNS (what the sink's verifier asks). */
export async function publishDkim(call: ApiCall, dns: StubDns, domain: string): Promise<void> {
  const status = JSON.parse((await call('owner', 'GET', `/domains/${domain}/email/`)).text) as {
    records: Array<{ name: string; type: string; destination: string }>;
  };
  const dkim = status.records.find((r) => r.name.endsWith('._domainkey'))!;
  dns.set(`${dkim.name}.${domain}`, 'TXT', [dkim.destination]);
}

/** An SMTP client session to the mail node: sends one message, answers nodemailer's info or throws its error. */
export async function sendMail(
  mailPort: number,
  opts: { from: string; to: string; subject?: string; text?: string; raw?: string },
): Promise<{ response: string }> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: mailPort,
    secure: false,
    tls: { rejectUnauthorized: false },
  });
  try {
    const info = await transport.sendMail(
      opts.raw
        ? { envelope: { from: opts.from, to: [opts.to] }, raw: opts.raw }
        : { from: opts.from, to: opts.to, subject: opts.subject ?? 'hello', text: opts.text ?? 'hello there' },
    );
    return { response: String(info.response) };
  } finally {
    transport.close();
  }
}
