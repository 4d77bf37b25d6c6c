// UDP and TCP listeners (RFC 1035 §4.2, RFC 7766): each packet or length-prefixed message goes to answerQuery.
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import { answerQuery, servfail } from './handler.js';
import type { Counters } from './counters.js';
import type { ZoneTable } from './zone/table.js';

export interface ServerOptions {
  host: string;
  port: number;
  tcpIdleMs: number;
  table: ZoneTable;
  counters: Counters;
}

export interface DnsServer {
  port: number;
  close(): Promise<void>;
}

/** Largest number of bytes a TCP client may leave unread before it is disconnected. */
const MAX_TCP_BACKLOG = 1 << 20;
/** Open TCP connections per process; beyond it new ones are refused (idle ones close after tcpIdleMs). */
const MAX_TCP_CONNECTIONS = 4096;

export async function startDnsServer(o: ServerOptions): Promise<DnsServer> {
  const udp = await bindUdp(o);
  const port = udp.address().port;
  let tcp: Server;
  try {
    tcp = await listenTcp(o, port);
  } catch (err) {
    udp.close();
    throw err;
  }
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        udp.close();
        tcp.close(() => resolve());
      }),
  };
}

function bindUdp(o: ServerOptions): Promise<Socket> {
  const { table, counters } = o;
  // A 4 MiB receive buffer (capped by net.core.rmem_max) rides out short stalls without dropping queries.
  const sock = createSocket({ type: o.host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 1 << 22 });
  sock.on('message', (msg, rinfo) => {
    counters.dns_queries_udp_total++;
    let out: Buffer | null;
    try {
      out = answerQuery(msg, msg.length, false, table, counters);
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
      resolve(sock);
    });
  });
}

function listenTcp(o: ServerOptions, port: number): Promise<Server> {
  const server = createServer({ noDelay: true }, (socket) => serveConnection(socket, o));
  server.maxConnections = MAX_TCP_CONNECTIONS;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: o.host, exclusive: false }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** One TCP connection: several queries, each answered in order, closed after tcpIdleMs without a query. */
function serveConnection(socket: TcpSocket, o: ServerOptions): void {
  const { table, counters } = o;
  counters.dns_tcp_connections_total++;
  let pending: Buffer | null = null;
  socket.setTimeout(o.tcpIdleMs, () => socket.destroy());
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
      counters.dns_queries_tcp_total++;
      let out: Buffer | null;
      try {
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
