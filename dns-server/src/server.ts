// UDP and TCP listeners (RFC 1035 §4.2, RFC 7766): each packet or length-prefixed message goes to answerQuery.
import cluster from 'node:cluster';
import { createSocket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import { answerQuery, servfail } from './handler.js';
import { streamTransfer, zoneTransfer } from './xfr/transfer.js';
import type { Counters } from './counters.js';
import type { ZoneTable } from './zone/table.js';
import { ResponseRateLimiter, parseAddress, parsedWords, type RrlConfig } from './rrl.js';
import { bindBatchUdp, type UdpListener } from './udp-batch.js';

export interface ServerOptions {
  host: string;
  port: number;
  /** Time a TCP client has to send each whole query; bytes that complete no query do not extend it. */
  tcpIdleMs: number;
  /** Open TCP connections per process (default 4096). */
  tcpMaxConnections?: number;
  /** Open TCP connections per client address (IPv6: per /64) per process (default 32). */
  tcpMaxPerClient?: number;
  /** UDP response rate limiting; undefined or rate 0: off. */
  rrl?: RrlConfig;
  /** UDP datagram I/O: batched through the native module (default), or node:dgram (DNS_UDP_IO=dgram). */
  udpIo?: 'batch' | 'dgram';
  table: ZoneTable;
  counters: Counters;
}

export interface DnsServer {
  port: number;
  close(): Promise<void>;
}

/** Largest number of bytes a TCP client may leave unread before it is disconnected. */
const MAX_TCP_BACKLOG = 1 << 20;

export async function startDnsServer(o: ServerOptions): Promise<DnsServer> {
  // Port 0: the port the system gives UDP may be taken for TCP; another one is tried (each try costs two binds).
  for (let attempt = 1; ; attempt++) {
    const udp = await bindUdp(o);
    const port = udp.port;
    try {
      return served(udp, await listenTcp(o, port), port);
    } catch (err) {
      udp.close();
      const taken = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
      if (!(o.port === 0 && taken && attempt < 20)) throw err;
    }
  }
}

function served(udp: UdpListener, tcp: Server, port: number): DnsServer {
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        udp.close();
        tcp.close(() => resolve());
      }),
  };
}

/** A 4 MiB receive buffer (capped by net.core.rmem_max) rides out short stalls without dropping queries. */
const RECV_BUFFER = 1 << 22;

function bindUdp(o: ServerOptions): Promise<UdpListener> {
  const rrl = o.rrl && o.rrl.rate > 0 ? new ResponseRateLimiter(o.rrl) : null;
  if ((o.udpIo ?? 'batch') === 'dgram') return bindDgram(o, rrl);
  // Each node:cluster worker binds its own socket on the shared port (SO_REUSEPORT); the kernel spreads the peers.
  return bindBatchUdp({ ...o, rrl, reusePort: cluster.isWorker, recvBufferSize: RECV_BUFFER });
}

/** The node:dgram listener: one 'message' callback and one send per datagram. */
function bindDgram(o: ServerOptions, rrl: ResponseRateLimiter | null): Promise<UdpListener> {
  const { table, counters } = o;
  const sock = createSocket({ type: o.host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: RECV_BUFFER });
  sock.on('message', (msg, rinfo) => {
    counters.dns_queries_udp_total++;
    let out: Buffer | null;
    try {
      out = answerQuery(msg, msg.length, false, table, counters, rrl, rinfo.address);
    } catch {
      counters.dns_handler_errors_total++;
      out = servfail(msg, msg.length);
    }
    if (out !== null) sock.send(out, rinfo.port, rinfo.address);
  });
  return new Promise((resolve, reject) => {
    sock.once('error', reject);
    // exclusive: false lets cluster workers share the primary's socket (node:cluster, Linux).
    sock.bind({ port: o.port, address: o.host, exclusive: false }, () => {
      sock.off('error', reject);
      sock.on('error', () => {
        /* ICMP errors on send: nothing to do per packet */
      });
      resolve({ port: sock.address().port, close: () => sock.close() });
    });
  });
}

function listenTcp(o: ServerOptions, port: number): Promise<Server> {
  const perClient = new Map<string, number>();
  const maxPerClient = o.tcpMaxPerClient ?? 32;
  const server = createServer({ noDelay: true }, (socket) => {
    const key = clientKey(socket.remoteAddress ?? '');
    const open = perClient.get(key) ?? 0;
    if (open >= maxPerClient) {
      o.counters.dns_tcp_refused_total++;
      socket.resetAndDestroy();
      return;
    }
    perClient.set(key, open + 1);
    socket.once('close', () => {
      const n = perClient.get(key)! - 1;
      if (n === 0) perClient.delete(key);
      else perClient.set(key, n);
    });
    serveConnection(socket, o);
  });
  server.maxConnections = o.tcpMaxConnections ?? 4096;
  server.on('drop', () => o.counters.dns_tcp_refused_total++);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: o.host, exclusive: false }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** What the per-client TCP limit counts by: the IPv4 address, or the IPv6 /64 (one host often holds a whole /64). */
export function clientKey(address: string): string {
  if (!parseAddress(address)) return address;
  const w = parsedWords();
  if (w[0] === 0 && w[1] === 0 && w[2] === 0 && w[3] === 0 && w[4] === 0 && w[5] === 0xffff)
    return `${w[6] >> 8}.${w[6] & 0xff}.${w[7] >> 8}.${w[7] & 0xff}`;
  return `${w[0].toString(16)}:${w[1].toString(16)}:${w[2].toString(16)}:${w[3].toString(16)}::/64`;
}

/**
 * One TCP connection: several queries, each answered in order. The client has tcpIdleMs to send each whole query
 * (from the connection's start or the previous query): bytes that complete no query do not extend it, so a client
 * dribbling a byte at a time is closed like an idle one (RFC 7766 §6.2.3).
 */
function serveConnection(socket: TcpSocket, o: ServerOptions): void {
  const { table, counters } = o;
  counters.dns_tcp_connections_total++;
  let pending: Buffer | null = null;
  const deadline = setTimeout(() => {
    counters.dns_tcp_timeouts_total++;
    socket.destroy();
  }, o.tcpIdleMs);
  socket.once('close', () => clearTimeout(deadline));
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    const buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
    pending = null;
    let p = 0;
    while (buf.length - p >= 2) {
      const len = buf.readUInt16BE(p);
      if (buf.length - p - 2 < len) break;
      const msg = buf.subarray(p + 2, p + 2 + len);
      p += 2 + len;
      deadline.refresh();
      counters.dns_queries_tcp_total++;
      let out: Buffer | null;
      try {
        // AXFR/IXFR (xfr/transfer.ts): streamed as the client reads, the idle timer kept alive while it does.
        const xfr = zoneTransfer(msg, len, table, socket.remoteAddress ?? '');
        if (xfr !== null) {
          streamTransfer(socket, xfr, () => deadline.refresh());
          continue;
        }
        out = answerQuery(msg, len, true, table, counters);
      } catch {
        counters.dns_handler_errors_total++;
        out = servfail(msg, len);
      }
      if (out === null) continue;
      const framed = Buffer.allocUnsafe(out.length + 2);
      framed.writeUInt16BE(out.length, 0);
      out.copy(framed, 2);
      socket.write(framed);
    }
    if (p < buf.length) pending = buf.subarray(p);
    if (socket.writableLength > MAX_TCP_BACKLOG) socket.destroy(); // a client that never reads
  });
}
