// Pebble, Let's Encrypt's test ACME server, for the ACME tests: the binary scripts/setup.mjs built with `go install`,
// started on free ports on 127.0.0.1 with our own config, resolving names through the DNS server we name
// (`-dnsserver`: our own DNS node, or the stub internet), fetching http-01 key authorizations from the stack's edge
// (its HTTP port is Pebble's httpPort), its ACME endpoint served with a throw-away certificate that the processes
// under test trust through NODE_EXTRA_CA_CERTS.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
// @ts-expect-error -- setup.mjs is plain JavaScript without type declarations
import { ensurePebble } from '../../scripts/setup.mjs';
import { selfSigned } from '../../edge-node/src/testing/certs.js';
import { stopProcess } from '../helpers/child-process.js';
import { connect, type PeerCertificate } from 'node:tls';
import { ensureNodeToken } from '@platform/shared/node-token';
import { eventually, startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';
import { startStubDns } from '../helpers/stub-dns.js';
import { freePort, startDnsNode, type ControlPlaneProcess, type DnsNodeProcess } from './sync-harness.js';
import { startEdgeNodeProcess, type EdgeNodeProcess } from './edge-harness.js';

export interface Pebble {
  /** The ACME directory (ACME_DIRECTORY_URL of the processes under test). */
  directoryUrl: string;
  /** PEM of the certificate Pebble's HTTPS endpoints present: give it to them as NODE_EXTRA_CA_CERTS (this file). */
  tlsCaFile: string;
  /** The port Pebble fetches http-01 key authorizations from (the stack's edge listens on it). */
  httpPort: number;
  /** Pebble's current issuing root (a new one on every start: Pebble keeps nothing). */
  root(): Promise<string>;
  /** Stops Pebble (the issuer becomes unavailable); start() brings it back on the same ports. */
  stop(): Promise<void>;
  /** Starts it again, issuing certificates valid for `validitySeconds` when given (renewal tests). */
  start(validitySeconds?: number): Promise<void>;
  output(): string;
  close(): Promise<void>;
}

export interface PebbleOptions {
  /** host:port of the DNS server Pebble asks for `_acme-challenge` TXT records (over TCP). */
  dnsServer: string;
  /** Validity of issued certificates in seconds (renewal tests use a short one). */
  validitySeconds?: number;
}

export async function startPebble(opts: PebbleOptions): Promise<Pebble> {
  const bin = ensurePebble() as string;
  const dir = mkdtempSync(join(tmpdir(), 'pebble-'));
  const cert = join(dir, 'tls-cert.pem');
  const key = join(dir, 'tls-key.pem');
  const endpoint = selfSigned(['127.0.0.1', 'localhost']);
  writeFileSync(cert, endpoint.certificatePem);
  writeFileSync(key, endpoint.privateKeyPem);
  const [acmePort, mgmtPort, httpPort, tlsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const config = join(dir, 'pebble.json');
  const writeConfig = (validitySeconds: number) =>
    writeFileSync(
      config,
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${acmePort}`,
          managementListenAddress: `127.0.0.1:${mgmtPort}`,
          certificate: cert,
          privateKey: key,
          // http-01 and tls-alpn-01 are validated on these ports (the stack's edge listens on httpPort).
          httpPort,
          tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: false,
          domainBlocklist: ['blocked-domain.example'],
          retryAfter: { authz: 1, order: 1 },
          keyAlgorithm: 'ecdsa',
          profiles: {
            default: { description: 'test profile', validityPeriod: validitySeconds },
          },
        },
      }),
    );
  writeConfig(opts.validitySeconds ?? 7776000);
  const tlsCa = endpoint.certificatePem;
  const dispatcher = new Agent({ connect: { ca: tlsCa } });
  const mgmt = `https://127.0.0.1:${mgmtPort}`;
  let proc: ChildProcess | undefined;
  let out = '';
  const start = async () => {
    out = '';
    proc = spawn(bin, ['-config', config, '-dnsserver', opts.dnsServer], {
      env: {
        ...process.env,
        // No random sleeps before validations, no rejected nonces, no reused authorizations: the tests run in seconds
        // and every order validates its own challenges.
        PEBBLE_VA_NOSLEEP: '1',
        PEBBLE_WFE_NONCEREJECT: '0',
        PEBBLE_AUTHZREUSE: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (d: Buffer) => {
      out = (out + d.toString()).slice(-20_000);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    const end = Date.now() + 30_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`pebble exited with ${proc.exitCode}:\n${out}`);
      const ok = await fetch(`https://127.0.0.1:${acmePort}/dir`, { dispatcher })
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) return;
      if (Date.now() > end) throw new Error(`pebble did not answer:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stop = async () => {
    if (proc) await stopProcess(proc, 'SIGTERM');
  };
  await start();
  return {
    directoryUrl: `https://127.0.0.1:${acmePort}/dir`,
    tlsCaFile: cert,
    httpPort,
    async root() {
      const res = await fetch(`${mgmt}/roots/0`, { dispatcher });
      if (!res.ok) throw new Error(`pebble roots: ${res.status}`);
      return res.text();
    },
    stop,
    async start(validitySeconds) {
      if (validitySeconds !== undefined) writeConfig(validitySeconds);
      await start();
    },
    output: () => out,
    async close() {
      await stop();
      await dispatcher.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Everything an ACME order touches, as processes: Temporal, control plane, worker, a DNS node, an edge, Pebble. */
export interface AcmeStack {
  L: Lifecycle;
  pebble: Pebble;
  dns: DnsNodeProcess;
  edge: EdgeNodeProcess;
  dnsPort: number;
  /** Creates a managed domain whose delegation already matches (it becomes active at the first check). */
  activeDomain(name: string): Promise<void>;
  /** Adds a proxied A record (origin on loopback). */
  proxied(domain: string, label: string): Promise<void>;
  /**
   * Completes a TLS handshake with the edge for `servername`, verifying the chain against Pebble's current root and
   * the name; resolves the peer certificate, rejects when it does not verify.
   */
  handshake(servername: string): Promise<PeerCertificate>;
  /** Waits until the edge serves `servername` a certificate that verifies against Pebble's root. */
  served(servername: string, ms?: number): Promise<PeerCertificate>;
  /** The processes' recent output (ACME_DEBUG=1 prints it after a test file). */
  outputs(): string;
  /** What a domain's certificate workflow did: its activities in order, with failures. */
  history(domain: string): Promise<string[]>;
  close(): Promise<void>;
}

export interface AcmeStackOptions {
  /**
   * Pebble asks the stub "internet" (L.dns, over TCP) instead of our DNS node, as a CA asks a recursive resolver: an
   * external domain's `_acme-challenge` CNAME set there leads into the ACME delegation zone, which both stubs ask our
   * DNS node for (ACME_DELEGATION_ZONE, default acme.platform.test). Names of managed domains must be forwarded too
   * (`L.dns.forward(domain, …)`) for their orders to validate.
   */
  internet?: boolean;
}

/** The ACME delegation zone of the control plane's defaults. */
export const DELEGATION_ZONE = 'acme.platform.test';

export async function startAcmeStack(
  label: string,
  cpEnv: Record<string, string> = {},
  opts: AcmeStackOptions = {},
): Promise<AcmeStack> {
  const dnsPort = await freePort();
  const syncPort = await freePort();
  const internet = opts.internet ? await startStubDns() : undefined;
  const pebble = await startPebble({ dnsServer: internet?.tcpAddress ?? `127.0.0.1:${dnsPort}` }).catch(
    async (err: unknown) => {
      await internet?.close();
      throw err;
    },
  );
  const trust = { NODE_EXTRA_CA_CERTS: pebble.tlsCaFile };
  let L: Lifecycle | undefined;
  let dns: DnsNodeProcess | undefined;
  let edge: EdgeNodeProcess | undefined;
  try {
    L = await startLifecycle(
      label,
      {
        ...trust,
        SYNC_PORT: String(syncPort),
        ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
        ACME_DIRECTORY_URL: pebble.directoryUrl,
        ACME_SWEEP_SECONDS: '1',
        ACME_RETRY_FIRST_SECONDS: '2',
        ACME_RETRY_MAX_SECONDS: '4',
        ACME_CHALLENGE_POLL_MS: '200',
        DELEGATION_WATCH_FIRST_SECONDS: '1',
        DELEGATION_WATCH_MAX_SECONDS: '2',
        ...cpEnv,
      },
      {
        workerEnv: {
          ...trust,
          ACME_DNS_NODES: `127.0.0.1:${dnsPort}`,
          ACME_EDGE_NODES: `127.0.0.1:${pebble.httpPort}`,
          DNS_TIMEOUT_MS: '500',
        },
        ...(internet ? { dns: internet } : {}),
      },
    );
    const zone = cpEnv.ACME_DELEGATION_ZONE ?? DELEGATION_ZONE;
    for (const s of [L.dns, L.dns2]) s.forward(zone, `127.0.0.1:${dnsPort}`);
    const hub = { syncUrl: `ws://127.0.0.1:${syncPort}`, nodeToken: ensureNodeToken(L.dataDir), apiUrl: L.apiUrl };
    dns = await startDnsNode(hub as ControlPlaneProcess, { DNS_PORT: String(dnsPort) });
    // The edge's HTTP port is the one Pebble fetches http-01 key authorizations from.
    edge = await startEdgeNodeProcess(hub, { EDGE_HTTP_PORT: String(pebble.httpPort) });
  } catch (err) {
    await edge?.stop();
    await dns?.stop();
    if (L) await L.close();
    else await internet?.close();
    await pebble.close();
    throw err;
  }
  const handshake = async (servername: string): Promise<PeerCertificate> => {
    const ca = await pebble.root();
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: edge!.httpsPort, servername, ca, timeout: 5000 });
      socket.once('secureConnect', () => {
        const cert = socket.getPeerCertificate();
        socket.destroy();
        resolve(cert);
      });
      socket.once('timeout', () => {
        socket.destroy();
        reject(new Error('TLS handshake timed out'));
      });
      socket.once('error', reject);
    });
  };
  const api = L.api;
  const stub = [L.dns, L.dns2];
  return {
    L,
    pebble,
    dns,
    edge,
    dnsPort,
    async activeDomain(name) {
      for (const s of stub) s.delegate(name, ['ns1.platform.test', 'ns2.platform.test']);
      const created = await api('POST', '/domains/', { name });
      if (created.status !== 200)
        throw new Error(`POST /domains/ ${name}: ${created.status} ${JSON.stringify(created.body)}`);
      await eventually(`${name} to become active`, async () =>
        (await api('GET', `/domains/${name}`)).body.state === 'active' ? true : undefined,
      );
    },
    async proxied(domain, name) {
      const res = await api('POST', `/domains/${domain}/records/`, {
        name,
        type: 'A',
        destination: '127.0.0.1',
        proxied: true,
      });
      if (res.status !== 200) throw new Error(`proxied record ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    },
    handshake,
    outputs: () =>
      [
        `---- worker\n${L.workerOutput()}`,
        `---- control plane\n${L.controlPlaneOutput()}`,
        `---- pebble\n${pebble.output()}`,
        `---- edge\n${edge.output()}`,
      ].join('\n'),
    async history(domain) {
      const events = (await L.temporal.client.workflow.getHandle(`certificates:${domain}`).fetchHistory()).events ?? [];
      return events.flatMap((e) => {
        const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
        if (scheduled) return [scheduled];
        const f = e.activityTaskFailedEventAttributes?.failure ?? e.workflowExecutionFailedEventAttributes?.failure;
        if (f) return [`  failed: ${f.message}`];
        if (e.timerStartedEventAttributes) return ['  timer'];
        return [];
      });
    },
    served: (servername, ms = 120_000) =>
      eventually(`the edge to serve ${servername} a certificate Pebble issued`, () => handshake(servername), ms),
    async close() {
      await edge?.stop();
      await dns?.stop();
      await L?.close();
      await pebble.close();
    },
  };
}
