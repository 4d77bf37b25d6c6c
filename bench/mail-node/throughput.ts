// Email routing: messages per second through the mail node to a sink, beside the anchor (the same client sending
// straight to the sink: one bare SMTP transaction), and the mail node's memory per concurrent connection.
// Everything on 127.0.0.1: the control plane in this process, the mail node as its own process (as npm start runs
// it), a stub DNS and the sink (test/e2e/email-harness.ts). Bounded: MESSAGES messages, CONNECTIONS connections.
//   node --import tsx bench/mail-node/throughput.ts            (MESSAGES=400 CONCURRENCY=8 CONNECTIONS=400 SIZE=4096)
import { createConnection, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import nodemailer from 'nodemailer';
import { sql } from 'drizzle-orm';
import { startEmailHarness } from '../../test/e2e/email-harness.js';

const MESSAGES = Number(process.env.MESSAGES ?? 400);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 400);
const SIZE = Number(process.env.SIZE ?? 4096);

const cleanups: Array<() => Promise<void> | void> = [];
const t = { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) };

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The mail node's memory after a full GC: SIGUSR2 makes it log `mail node memory` (it runs with --expose-gc). */
async function memory(h: {
  mailNode: { proc?: { pid?: number }; out: string };
}): Promise<{ rss: number; heap: number; external: number; connections: number }> {
  const seen = (h.mailNode.out.match(/"msg":"mail node memory"/g) ?? []).length;
  process.kill(h.mailNode.proc!.pid!, 'SIGUSR2');
  for (;;) {
    const lines = h.mailNode.out.split('\n').filter((l) => l.includes('"msg":"mail node memory"'));
    if (lines.length > seen) {
      const m = JSON.parse(lines[lines.length - 1]!) as {
        memory: { rss: number; heapUsed: number; external: number; arrayBuffers: number };
        connections: number;
      };
      return { rss: m.memory.rss, heap: m.memory.heapUsed, external: m.memory.external, connections: m.connections };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function blast(port: number, to: string): Promise<number> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    pool: true,
    maxConnections: CONCURRENCY,
    maxMessages: Infinity,
    tls: { rejectUnauthorized: false },
    ignoreTLS: true,
  });
  const body = 'x'.repeat(SIZE);
  const start = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < MESSAGES) {
        next++;
        await transport.sendMail({ from: 'bench@sender.test', to, subject: 'bench', text: body });
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  transport.close();
  return MESSAGES / seconds;
}

/** Opens `n` connections to the mail node, each through EHLO, MAIL FROM and RCPT TO, and holds them. */
async function hold(port: number, n: number, rcpt: string): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < n; i++) {
    const s = createConnection({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      let step = 0;
      let buffered = '';
      const script = ['EHLO bench.test\r\n', 'MAIL FROM:<bench@sender.test>\r\n', `RCPT TO:<${rcpt}>\r\n`];
      s.on('data', (d) => {
        buffered += d.toString();
        if (!/^\d{3} [^\r\n]*\r\n/m.test(buffered.split(/\r\n(?=\d{3} )/).pop() ?? '')) return;
        buffered = '';
        if (step < script.length) s.write(script[step++]!);
        else resolve();
      });
      s.once('error', reject);
    });
    sockets.push(s);
  }
  return sockets;
}

async function main(): Promise<void> {
  const h = await startEmailHarness(t, {
    MAIL_LOOKUP_CACHE_MS: '2000',
    MAIL_MAX_CONNECTIONS: String(CONNECTIONS + 50),
    NODE_OPTIONS: '--expose-gc',
  });
  await h.routedDomain('bench-mail.test', 'sink@dest.test');
  // The free plan forwards 100 a day: the bench's domain gets a support-set override.
  await h.cp.database.db
    .execute(sql`UPDATE subscriptions SET overrides = overrides || '{"max_email_forwards_per_day": 1000000}'::jsonb
    WHERE domain_id = (SELECT id FROM domains WHERE name = 'bench-mail.test')`);
  // Memory first, on the fresh process: CONNECTIONS connections held mid-transaction (after RCPT TO), heap + external
  // (buffers) after a full GC, and RSS, against the same figures with none.
  await new Promise((r) => setTimeout(r, 2000));
  const before = await memory(h);
  const sockets = await hold(h.mailPort, CONNECTIONS, 'info@bench-mail.test');
  const after = await memory(h);
  for (const s of sockets) s.destroy();
  const direct = await blast(h.sink.port, 'sink@dest.test');
  // CPU per message: the mail node's own, and this process's (client, sink, stub DNS and the control plane).
  const pid = h.mailNode.proc!.pid!;
  const nodeCpu0 = cpuSeconds(pid);
  const selfCpu0 = process.cpuUsage();
  const through = await blast(h.mailPort, 'info@bench-mail.test');
  const nodeCpuMs = ((cpuSeconds(pid) - nodeCpu0) * 1000) / MESSAGES;
  const self = process.cpuUsage(selfCpu0);
  const selfCpuMs = (self.user + self.system) / 1000 / MESSAGES;
  console.log(
    JSON.stringify({
      messages: MESSAGES,
      concurrency: CONCURRENCY,
      size: SIZE,
      direct_to_sink_per_s: Math.round(direct),
      through_mail_node_per_s: Math.round(through),
      ratio: Number((through / direct).toFixed(3)),
      mail_node_cpu_ms_per_message: Number(nodeCpuMs.toFixed(2)),
      bench_process_cpu_ms_per_message: Number(selfCpuMs.toFixed(2)),
      connections: CONNECTIONS,
      held_connections: after.connections,
      heap_plus_external_kb_per_connection: Number(
        ((after.heap + after.external - before.heap - before.external) / 1024 / CONNECTIONS).toFixed(1),
      ),
      rss_kb_per_connection: Number(((after.rss - before.rss) / 1024 / CONNECTIONS).toFixed(1)),
    }),
  );
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const c of cleanups.reverse()) await c();
    process.exit();
  });
