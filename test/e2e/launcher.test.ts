// `npm start` as a new user runs it: on ports of its own every process is told the addresses in use (a record
// written after start is answered by its DNS node and served by its edge); SIGINT and SIGTERM stop everything
// once, cleanly; a busy port is named by its variable before anything starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode } from '../../dns-server/src/testing/decode.js';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { udpQuery } from './dns-helpers.js';
import { waitUntil } from './edge-harness.js';
import {
  alive,
  descendants,
  killLauncher,
  launcherPorts,
  removeLauncherDir,
  startLauncher,
} from './launcher-harness.js';

/** `npm start` runs on its embedded database: the suite's Postgres round has nothing to add here. */
const ON_POSTGRES_ROUND = process.env.TEST_DATABASE_URL ? 'npm start uses PGlite; run on the PGlite round' : false;

const STACK_TRACE = /\n\s+at .+:\d+:\d+/;

test(
  'npm start on non-default ports: a record written after start is answered by DNS and served by the edge; SIGTERM to npm stops everything',
  { timeout: 400_000, skip: ON_POSTGRES_ROUND },
  async (t) => {
    const origin = await startStubOrigin('launcher', (req, res) => res.end(`origin ${req.url}`));
    t.after(() => origin.close());
    // The stub origin is on loopback: allowed as the README's tour allows its local origin.
    const launcher = await startLauncher({
      name: 'ports',
      viaNpm: true,
      extraEnv: { ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8' },
    });
    t.after(() => {
      killLauncher(launcher);
      removeLauncherDir(launcher);
    });
    const { ports } = launcher;
    assert.match(launcher.output(), new RegExp(`DNS\\s+127\\.0\\.0\\.1:${ports.DNS_PORT} UDP and TCP`));
    assert.match(launcher.output(), new RegExp(`edge\\s+http://127\\.0\\.0\\.1:${ports.EDGE_HTTP_PORT}`));
    // The summary lists every process's operations listener; each is ready (it was awaited) and counts its work.
    const metricsOf = {
      'DNS metrics': ports.DNS_METRICS_PORT,
      'edge metrics': ports.EDGE_METRICS_PORT,
      'worker metrics': ports.WORKER_METRICS_PORT,
    };
    for (const [label, port] of Object.entries(metricsOf)) {
      assert.match(launcher.output(), new RegExp(`${label}\\s+http://127\\.0\\.0\\.1:${port}/metrics`));
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      assert.equal(ready.status, 200, `${label} /readyz: ${await ready.text()}`);
    }
    const apiReady = await fetch(`http://127.0.0.1:${ports.API_PORT}/readyz`);
    assert.equal(apiReady.status, 200);

    const domain = 'launcher-ports.example.org';
    await launcher.api('POST', '/domains/', { name: domain });
    await launcher.api('POST', `/domains/${domain}/records/`, {
      name: 'plain',
      type: 'A',
      destination: '192.0.2.7',
      proxied: false,
    });
    await launcher.api('POST', `/domains/${domain}/records/`, {
      name: 'www',
      type: 'A',
      destination: '127.0.0.1',
      proxied: true,
      scheme: 'Http',
      port: origin.port,
    });
    const answer = await waitUntil(
      'the record from the DNS node',
      async () => {
        const a = await udpQuery(ports.DNS_PORT, buildQuery(`plain.${domain}`, 1), 1000);
        const d = a && decode(a);
        return d && d.answer.length > 0 ? d : undefined;
      },
      60_000,
    );
    assert.match(
      answer.answer.join('\n'),
      new RegExp(`^plain\\.${domain.replace(/\./g, '\\.')} \\d+ A 192\\.0\\.2\\.7$`),
    );
    const served = await waitUntil(
      'the proxied record at the edge',
      async () => {
        const r = await send(ports.EDGE_HTTP_PORT, `www.${domain}`, '/through');
        return r.status === 200 ? r : undefined;
      },
      60_000,
    );
    assert.equal(served.body, 'origin /through');
    const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(await scrape(ports.DNS_METRICS_PORT), /^dns_responses_total\{[^}]*rcode="NOERROR"[^}]*\} [1-9]/m);
    assert.match(await scrape(ports.EDGE_METRICS_PORT), /^edge_requests_total\{[^}]*status="200"[^}]*\} [1-9]/m);
    assert.match(await scrape(ports.WORKER_METRICS_PORT), /^# TYPE \w+/m);

    const pids = descendants(launcher.proc.pid!);
    assert.ok(pids.length >= 5, `npm, the launcher and its children: ${pids.length}`);
    launcher.proc.kill('SIGTERM');
    const code = await launcher.exited;
    assert.equal(code, 0, launcher.output().slice(-3000));
    await waitUntil('every child gone', async () => (pids.every((p) => !alive(p)) ? true : undefined), 30_000);
    assert.doesNotMatch(launcher.output(), STACK_TRACE);
    assert.doesNotMatch(launcher.output(), /IllegalStateError|DRAINING/);
  },
);

test(
  'Ctrl-C (SIGINT to the launcher) stops every process once with exit code 0 and no stack trace',
  { timeout: 300_000, skip: ON_POSTGRES_ROUND },
  async (t) => {
    const launcher = await startLauncher({ name: 'sigint' });
    t.after(() => {
      killLauncher(launcher);
      removeLauncherDir(launcher);
    });
    const pids = descendants(launcher.proc.pid!);
    assert.ok(pids.length >= 5, `the launcher's children: ${pids.length}`);
    // A terminal's Ctrl-C reaches the whole foreground process group; the launcher put its children in their own.
    launcher.proc.kill('SIGINT');
    assert.equal(await launcher.exited, 0, launcher.output().slice(-3000));
    await waitUntil('every child gone', async () => (pids.every((p) => !alive(p)) ? true : undefined), 30_000);
    assert.doesNotMatch(launcher.output(), STACK_TRACE);
    assert.doesNotMatch(launcher.output(), /IllegalStateError|DRAINING/);
  },
);

test(
  'npm killed with SIGKILL: the launcher notices it was orphaned and stops every process it started',
  { timeout: 400_000, skip: ON_POSTGRES_ROUND },
  async (t) => {
    const launcher = await startLauncher({ name: 'orphan', viaNpm: true });
    let pids: number[] = [];
    t.after(() => {
      killLauncher(launcher);
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
      removeLauncherDir(launcher);
    });
    pids = descendants(launcher.proc.pid!);
    assert.ok(pids.length >= 5, `the launcher and its children: ${pids.length}\n${launcher.output()}`);
    launcher.proc.kill('SIGKILL');
    await waitUntil(
      'every process of the launcher gone',
      async () => (pids.every((p) => !alive(p)) ? true : undefined),
      60_000,
    );
    assert.match(launcher.output(), /is gone: stopping/);
  },
);

test(
  'a busy port: the launcher names the variable that moves it and starts nothing',
  { timeout: 60_000, skip: ON_POSTGRES_ROUND },
  async (t) => {
    const ports = await launcherPorts();
    const squatter = createServer();
    await new Promise<void>((r) => squatter.listen(ports.SYNC_PORT, '127.0.0.1', () => r()));
    t.after(() => squatter.close());
    await assert.rejects(
      startLauncher({ name: 'busy', ports, extraEnv: { TEMPORAL_ADDRESS: '127.0.0.1:9' } }),
      (err: Error) => {
        assert.match(
          err.message,
          new RegExp(
            `port ${ports.SYNC_PORT} on 127\\.0\\.0\\.1 is already in use, needed for the sync hub: stop what listens there or set SYNC_PORT`,
          ),
        );
        assert.doesNotMatch(err.message, /every process is up|control plane listening/);
        return true;
      },
    );
  },
);
