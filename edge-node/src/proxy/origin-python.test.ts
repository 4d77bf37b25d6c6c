// Python's http.server as the origin, as a new user tries the edge: it answers HTTP/1.0 and closes every connection,
// and answers a POST (which SimpleHTTPRequestHandler does not handle) with 501 without reading its body. Through a
// real edge on either origin client, every GET is answered with the file and every POST with Python's 501 or a 502
// naming the failure in x-edge-error: never a reset of the client's connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxiedRecord, snapshot, startTestEdge } from '../testing/harness.js';
import { viaAgent, type Outcome } from './origin-client/testing.js';

/** `python3 -m http.server` on a free port of 127.0.0.1, serving a directory with one file; stopped after the test. */
async function pythonOrigin(t: { after(fn: () => void): void }): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'py-origin-'));
  writeFileSync(join(dir, 'hello.txt'), 'hello from python\n');
  const py = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    py.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`python3 -m http.server did not start: ${out}`)), 30_000);
    py.on('error', (err) => reject(new Error(`python3 is needed for this test: ${err.message}`)));
    py.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /port (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    py.stderr.on('data', () => undefined); // its access log
  });
}

for (const client of ['js', 'native'])
  test(`Python's http.server behind the edge: GETs and POSTs answered, never a reset (${client} origin client)`, async (t) => {
    const port = await pythonOrigin(t);
    const edge = await startTestEdge(t, [snapshot('example.org', { records: [proxiedRecord('py', port)] })], {
      EDGE_ORIGIN_CLIENT: client,
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    t.after(() => agent.destroy());
    const sizes = [0, 10, 1000, 70_000, 300_000];
    let next = 0;
    const total = 100;
    const statuses = new Map<number, number>();
    const worker = async () => {
      while (next < total) {
        const i = next++;
        const post = i % 2 === 1;
        let o: Outcome;
        try {
          o = post
            ? await viaAgent(edge.node.server.httpPort, agent, 'py.example.org', 'POST', '/', sizes[i % sizes.length])
            : await viaAgent(edge.node.server.httpPort, agent, 'py.example.org', 'GET', '/hello.txt');
        } catch (err) {
          assert.fail(
            `request ${i} (${post ? 'POST' : 'GET'}): the client's request failed: ${(err as Error).message}`,
          );
        }
        statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
        if (!post) {
          assert.equal(o.status, 200, `GET ${i}: ${o.status} ${o.edgeError}`);
          assert.equal(o.body, 'hello from python\n');
        } else if (o.status === 502) assert.equal(o.edgeError, 'EDGE_ERR_UPSTREAM_UNREACHABLE');
        else assert.equal(o.status, 501, `POST ${i}: ${o.status}`);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    assert.ok((statuses.get(501) ?? 0) > 0, JSON.stringify([...statuses]));
  });
