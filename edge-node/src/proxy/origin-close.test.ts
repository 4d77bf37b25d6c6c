// Origins that do not keep connections alive (HTTP/1.0, Connection: close), as Python's http.server: many POSTs through
// a real edge, none answered with a reset of the client's connection. Each gets the origin's answer or a 502 that
// names the failure in x-edge-error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { createServer } from 'node:net';
import { proxiedRecord, snapshot, startTestEdge } from '../testing/harness.js';
import { listenForTest } from '../testing/listen.js';
import { viaAgent, type Outcome } from './origin-client/testing.js';

type Mode = 'unread' | 'read-close-delimited' | 'read-sized' | 'http11-close';

/**
 * A raw origin on 127.0.0.1 that answers each connection once and closes it, as Python's http.server does:
 * `unread` answers 501 at once without reading the request body and closes (the unread body makes the kernel reset the
 * connection, as Python's does for a POST it does not handle); `read-*` read the body first and answer HTTP/1.0 with or
 * without Content-Length; `http11-close` answers HTTP/1.1 with Connection: close.
 */
async function closingOrigin(t: { after(fn: () => Promise<void>): void }, mode: Mode): Promise<number> {
  const server = createServer((s) => {
    s.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let need = -1;
    let answered = false;
    const answer = (body: Buffer) => {
      answered = true;
      s.pause(); // nothing more is read: what the client still sends stays in the kernel's buffer
      if (mode === 'unread') {
        const page = Buffer.from('<html><body>Unsupported method</body></html>\n');
        // Head and body in two writes, as Python's BaseHTTPRequestHandler.send_error does, then a close with the
        // request body unread: the kernel resets the connection, and may drop the body written just before.
        s.write(
          'HTTP/1.0 501 Unsupported method\r\nServer: SimpleHTTP/0.6 Python/3.12\r\nConnection: close\r\n' +
            `Content-Type: text/html\r\nContent-Length: ${page.length}\r\n\r\n`,
        );
        setTimeout(() => {
          s.write(page);
          s.end(() => s.destroy());
        }, 2);
        return;
      } else if (mode === 'read-close-delimited') {
        s.write('HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6\r\nContent-Type: text/plain\r\n\r\n');
        s.write(`got ${body.length}`);
      } else if (mode === 'read-sized') {
        s.write(
          `HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${String(body.length).length + 4}\r\n\r\n`,
        );
        s.write(`got ${body.length}`);
      } else {
        const text = `got ${body.length}`;
        s.write(`HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: ${text.length}\r\n\r\n${text}`);
      }
      // shutdown, then close at once: whatever of the request is still unread makes the kernel send a reset.
      s.end(() => s.destroy());
    };
    s.on('data', (chunk: Buffer) => {
      if (answered) return;
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (need < 0) {
        const m = /\r\ncontent-length: *(\d+)/i.exec(buf.subarray(0, end).toString('latin1'));
        need = m ? Number(m[1]) : 0;
        if (mode === 'unread') return answer(Buffer.alloc(0));
      }
      if (buf.length - end - 4 >= need) answer(buf.subarray(end + 4, end + 4 + need));
    });
  });
  return listenForTest(t, server);
}

for (const client of ['js', 'native'])
  test(`POSTs to origins that close their connections are never answered with a reset (${client} origin client)`, async (t) => {
    const modes: Mode[] = ['unread', 'read-close-delimited', 'read-sized', 'http11-close'];
    const ports = new Map<Mode, number>();
    for (const m of modes) ports.set(m, await closingOrigin(t, m));
    const edge = await startTestEdge(
      t,
      [snapshot('example.org', { records: modes.map((m) => proxiedRecord(m, ports.get(m)!)) })],
      { EDGE_ORIGIN_CLIENT: client },
    );
    const port = edge.node.server.httpPort;
    // Bodies from empty to larger than the socket buffers: an origin that does not read them resets mid-write.
    const sizes = [0, 1, 1000, 70_000, 300_000, 1_000_000];

    for (const mode of modes) {
      await t.test(mode, async (st) => {
        // A keep-alive client, 4 at a time: a reset of one of its connections fails the request it carries.
        const agent = new Agent({ keepAlive: true, maxSockets: 4 });
        st.after(() => agent.destroy());
        const seen = new Map<string, number>();
        let next = 0;
        const total = 120;
        const worker = async () => {
          while (next < total) {
            const size = sizes[next++ % sizes.length];
            let o: Outcome;
            try {
              o = await viaAgent(port, agent, `${mode}.example.org`, 'POST', '/upload', size);
            } catch (err) {
              assert.fail(`${mode}, ${size} bytes: the client's request failed: ${(err as Error).message}`);
            }
            if (o.status === 502) assert.equal(o.edgeError, 'EDGE_ERR_UPSTREAM_UNREACHABLE', `${mode}, ${size}`);
            else if (mode === 'unread') {
              assert.equal(o.status, 501, `${mode}, ${size}`);
              assert.match(o.body, /Unsupported method/);
            } else {
              assert.equal(o.status, 200, `${mode}, ${size}: ${o.body}`);
              assert.equal(o.body, `got ${size}`, `${mode}, ${size}`);
            }
            seen.set(String(o.status), (seen.get(String(o.status)) ?? 0) + 1);
          }
        };
        await Promise.all([worker(), worker(), worker(), worker()]);
        // An origin that reads the body and answers is always answered through: never a 502.
        if (mode !== 'unread') assert.deepEqual([...seen.keys()], ['200'], `${mode}: ${JSON.stringify([...seen])}`);
        else assert.ok((seen.get('501') ?? 0) > 0, `unread: ${JSON.stringify([...seen])}`);
      });
    }
  });
