// A stub "internet" DNS server on 127.0.0.1 (UDP) for tests: it plays the parent zone's delegation (NS answers),
// a domain's old DNS (records for the zone scan) and the TXT/CNAME records of external domains.
// Records are set per name and type in presentation form; a CNAME is followed inside the stub as a resolver would,
// and into a zone another server answers (`forward`: our own DNS node for the ACME delegation zone), as a recursive
// resolver follows a delegation. Answers over UDP, and over TCP on `tcpAddress` (Pebble asks over TCP).
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import DNS from 'dns2';

const { Packet } = DNS;
type TypeName = 'A' | 'AAAA' | 'CNAME' | 'MX' | 'TXT' | 'NS' | 'CAA' | 'PTR';

export interface StubDns {
  port: number;
  /** e.g. `127.0.0.1:5300`, for DNS_RESOLVERS. */
  address: string;
  /** The same answers over TCP (another port), e.g. for `pebble -dnsserver`. */
  tcpAddress: string;
  /** Names at or below `zone` that the stub holds nothing for are asked of `address` (host:port, UDP). */
  forward(zone: string, address: string): void;
  /** Replaces the values of name/type: A '192.0.2.1', MX '10 mail.example.org', CAA '0 issue "letsencrypt.org"'. */
  set(name: string, type: TypeName, values: string[], ttl?: number): void;
  /** The parent zone delegates `domain` to these nameservers (NS answers at the domain's name). */
  delegate(domain: string, nameservers: string[]): void;
  /** Removes name (one type, or all). */
  clear(name: string, type?: TypeName): void;
  /** How many queries arrived. */
  queries(): number;
  close(): Promise<void>;
}

const norm = (n: string) => n.toLowerCase().replace(/\.$/, '');

function resource(name: string, type: TypeName, value: string, ttl: number): Record<string, unknown> {
  const base = { name, type: Packet.TYPE[type], class: Packet.CLASS.IN, ttl };
  switch (type) {
    case 'A':
    case 'AAAA':
      return { ...base, address: value };
    case 'CNAME':
    case 'PTR':
      return { ...base, domain: value };
    case 'NS':
      return { ...base, ns: value };
    case 'TXT':
      // A character-string holds 255 bytes at most: a longer value (a DKIM key) goes as several, as zone files write it.
      return { ...base, data: value.length > 255 ? value.match(/[^]{1,255}/g) : value };
    case 'MX': {
      const [p, ex] = value.split(/\s+/);
      return { ...base, priority: Number(p), exchange: ex };
    }
    case 'CAA': {
      const m = /^(\d+)\s+(\S+)\s+"?(.*?)"?$/.exec(value)!;
      return { ...base, flags: Number(m[1]), tag: m[2], value: m[3] };
    }
  }
}

export async function startStubDns(): Promise<StubDns> {
  const zone = new Map<string, Map<TypeName, { values: string[]; ttl: number }>>();
  const forwards = new Map<string, { host: string; port: number }>();
  let count = 0;
  let closed = false;
  const socket: Socket = createSocket('udp4');

  const forwardOf = (name: string) => {
    for (const [z, to] of forwards) if (name === z || name.endsWith(`.${z}`)) return to;
    return undefined;
  };

  const answer = async (request: InstanceType<typeof Packet>) => {
    const response = Packet.createResponseFromRequest(request);
    response.header.ra = 1;
    const q = request.questions[0];
    if (!q) return response;
    const typeName = Object.entries(Packet.TYPE).find(([, v]) => v === q.type)?.[0] as TypeName | undefined;
    let name = norm(q.name);
    for (let hops = 0; hops < 8; hops++) {
      const node = zone.get(name);
      const upstream = node ? undefined : forwardOf(name);
      if (upstream && typeName) {
        try {
          const res = await DNS.UDPClient({ dns: upstream.host, port: upstream.port, timeout: 2000 })(name, typeName);
          for (const a of res.answers) response.answers.push(a);
          if (hops === 0) response.header.rcode = res.header.rcode;
        } catch {
          response.header.rcode = 2; // SERVFAIL
        }
        break;
      }
      if (!node) {
        if (hops === 0) response.header.rcode = 3; // NXDOMAIN
        break;
      }
      const cname = node.get('CNAME');
      if (cname && typeName !== 'CNAME') {
        response.answers.push(resource(name, 'CNAME', cname.values[0], cname.ttl) as never);
        name = norm(cname.values[0]);
        continue;
      }
      const rrset = typeName ? node.get(typeName) : undefined;
      for (const v of rrset?.values ?? []) response.answers.push(resource(name, typeName!, v, rrset!.ttl) as never);
      break;
    }
    return response;
  };

  const respond = async (msg: Buffer): Promise<Buffer | undefined> => {
    count++;
    let request;
    try {
      request = Packet.parse(msg);
    } catch {
      return undefined;
    }
    return (await answer(request)).toBuffer();
  };
  socket.on('message', (msg, rinfo) => {
    void respond(msg).then((out) => {
      if (out) socket.send(out, rinfo.port, rinfo.address);
    });
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const port = socket.address().port;
  // TCP: each message behind its two-byte length (RFC 1035 4.2.2).
  const conns = new Set<TcpSocket>();
  const tcp: Server = createServer((conn) => {
    conns.add(conn);
    conn.on('close', () => conns.delete(conn));
    conn.on('error', () => conn.destroy());
    let buf = Buffer.alloc(0);
    conn.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        void respond(Buffer.from(msg)).then((out) => {
          if (!out || conn.destroyed) return;
          const len = Buffer.alloc(2);
          len.writeUInt16BE(out.length);
          conn.write(Buffer.concat([len, out]));
        });
      }
    });
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  const tcpPort = (tcp.address() as { port: number }).port;

  const stub: StubDns = {
    port,
    address: `127.0.0.1:${port}`,
    tcpAddress: `127.0.0.1:${tcpPort}`,
    forward(z, address) {
      const i = address.lastIndexOf(':');
      forwards.set(norm(z), { host: address.slice(0, i), port: Number(address.slice(i + 1)) });
    },
    set(name, type, values, ttl = 300) {
      const key = norm(name);
      const node = zone.get(key) ?? new Map();
      if (values.length === 0) node.delete(type);
      else node.set(type, { values, ttl });
      if (node.size === 0) zone.delete(key);
      else zone.set(key, node);
    },
    delegate(domain, nameservers) {
      stub.set(domain, 'NS', nameservers, 86400);
    },
    clear(name, type) {
      const key = norm(name);
      if (!type) zone.delete(key);
      else stub.set(key, type, []);
    },
    queries: () => count,
    async close() {
      if (closed) return;
      closed = true;
      for (const c of conns) c.destroy();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
  return stub;
}
