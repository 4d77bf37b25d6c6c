// Test helpers: stub origins on 127.0.0.1, snapshot and rule builders, an edge node on free ports, and an HTTP(S) client
// that sets Host/SNI and the local address.
import { mkdtempSync, rmSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { domainChange, openNodeStore } from '@platform/shared/node-store';
import {
  SCHEMA_MAJOR,
  type Certificate,
  type DomainSnapshot,
  type Rule,
  type ZoneRecord,
} from '@platform/shared/config';
import { encodeRuleBody, validateRule, type StoredRuleType } from '@platform/shared/match';
import { loadConfig } from '../config.js';
import { startEdgeNode, type EdgeNode } from '../node.js';

export interface SeenRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
export interface StubOrigin {
  port: number;
  seen: SeenRequest[];
  server: Server;
  close(): Promise<void>;
}

/**
 * An origin on 127.0.0.1 (or another loopback `host`) that records requests; the default handler answers 200
 * `origin <name> <url>`.
 */
export async function startStubOrigin(
  name: string,
  handler?: (req: IncomingMessage, res: ServerResponse, body: string) => void,
  host = '127.0.0.1',
): Promise<StubOrigin> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (handler) handler(req, res, body);
      else {
        res.setHeader('content-type', 'text/plain');
        res.end(`origin ${name} ${req.url}`);
      }
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    seen,
    server,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let nextRecordId = 1;

export function proxiedRecord(name: string, originPort: number, extra: Partial<ZoneRecord> = {}): ZoneRecord {
  return {
    id: nextRecordId++,
    name,
    type: 'A',
    destination: '127.0.0.1',
    ttl: 120,
    mxPriority: 0,
    proxied: true,
    captcha: false,
    scheme: 'Http',
    port: originPort,
    hostHeader: '',
    hostHeaderMode: 'own',
    timeout: 30,
    ...extra,
  };
}

let nextRuleId = 1;

/** A rule as the API would store it: validated and normalised by the same shared code, then encoded. */
export function rule(type: StoredRuleType, body: Record<string, unknown>): Rule {
  const v = validateRule(type, body);
  if (!v.ok) throw new Error(`bad test rule: ${JSON.stringify(v.problems)}`);
  if (v.value.passwords.length > 0) throw new Error('test rules take password_hash (await hashPassword(...)) only');
  const { enabled, priority, ...filters } = v.value.common;
  return { id: nextRuleId++, type, enabled, priority, body: encodeRuleBody({ ...filters, ...v.value.fields }) };
}

export function snapshot(
  name: string,
  opts: {
    records: ZoneRecord[];
    rules?: Rule[];
    certificates?: Certificate[];
    settings?: Partial<DomainSnapshot['settings']>;
    state?: string;
  },
): DomainSnapshot {
  return {
    schemaMajor: SCHEMA_MAJOR,
    domainId: 1,
    name,
    state: opts.state ?? 'active',
    dnsMode: 'managed',
    zone: {
      serial: 1,
      nameservers: [],
      soaMname: '',
      soaRname: '',
      soaRefresh: 0,
      soaRetry: 0,
      soaExpire: 0,
      soaMinimum: 0,
      soaTtl: 0,
      records: opts.records,
    },
    settings: {
      developerMode: false,
      developerModeExpiresAtMs: 0,
      cacheL2TtlDays: 3,
      cacheCapMb: 100,
      cachePurgeGeneration: 0,
      ...opts.settings,
    },
    ruleSet: { version: 1, rules: opts.rules ?? [] },
    certificates: opts.certificates ?? [],
  };
}

export interface TestEdge {
  node: EdgeNode;
  dataDir: string;
  version: number;
  /** Applies a snapshot through the node store, as the sync client would. */
  apply(s: DomainSnapshot): void;
  close(): Promise<void>;
}

export async function startTestEdge(
  t: { after(fn: () => Promise<void> | void): void } | null,
  snapshots: DomainSnapshot[] = [],
  env: Record<string, string> = {},
): Promise<TestEdge> {
  const dataDir = mkdtempSync(join(tmpdir(), 'edge-test-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    EDGE_HTTP_PORT: '0',
    EDGE_HTTPS_PORT: '0',
    SYNC_URL: 'off',
    CONTROL_PLANE_URL: 'off',
    // Stub origins live on loopback; a test of the refusal passes ALLOWED_PRIVATE_NETWORKS: '' (or its own ranges).
    ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
    // The whole edge suite runs on either origin client: EDGE_ORIGIN_CLIENT=js|native in the test's environment.
    ...(process.env.EDGE_ORIGIN_CLIENT ? { EDGE_ORIGIN_CLIENT: process.env.EDGE_ORIGIN_CLIENT } : {}),
    // and on either front: EDGE_FRONT=uws|native (native-front.test.ts runs the suites that apply with native).
    ...(process.env.EDGE_FRONT ? { EDGE_FRONT: process.env.EDGE_FRONT } : {}),
    ...env,
  });
  const store = openNodeStore(join(dataDir, 'edge-node'));
  const node = await startEdgeNode(config, store);
  node.store.onApplied((e) => node.refresh(domainChange(e)));
  const edge: TestEdge = {
    node,
    dataDir,
    version: 0,
    apply(s) {
      node.store.apply({ version: ++edge.version, domain: s.name, deleted: false, snapshot: s });
    },
    async close() {
      await node.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  for (const s of snapshots) edge.apply(s);
  t?.after(() => edge.close());
  return edge;
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to the edge with the given Host (and SNI for https), optionally from another loopback address. */
export function send(
  port: number,
  host: string,
  path: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    https?: boolean;
    localAddress?: string;
    /** Fails the request when no complete answer came within this many ms. */
    timeoutMs?: number;
  } = {},
): Promise<Reply> {
  const fn = opts.https ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = fn(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        agent: false,
        localAddress: opts.localAddress,
        headers: {
          host,
          ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}),
          ...opts.headers,
        },
        ...(opts.https ? { servername: host, rejectUnauthorized: false } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (opts.timeoutMs !== undefined)
      req.setTimeout(opts.timeoutMs, () =>
        req.destroy(new Error(`no answer to ${host}${path} within ${opts.timeoutMs} ms`)),
      );
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}
