// The http-front module's parser and connection handling over a real socket on 127.0.0.1: the fields handed to
// JavaScript, keep-alive, pipelining in order, heads split across reads, malformed and oversized heads refused with
// the connection closed, answers given after the batch, and a connection closed by the handler.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FIELDS, FLAG, M, listenFront, loadHttpFront, type Front } from './front.js';

const built = loadHttpFront() !== null;

interface Seen {
  method: string;
  host: string;
  target: string;
  path: string;
  ua: string;
  ae: string;
  cookie: string;
  head: string;
  flags: number;
  peer: number;
  slot: number;
  gen: number;
}

interface Answer {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** How the handler answers a request: now (its method and host + target as the body), later (respond()), or close. */
type Mode = 'now' | 'later' | 'close';

describe('http-front', { skip: built ? false : 'the http-front module is not built (npm run setup)' }, () => {
  let front: Front;
  const seen: Seen[] = [];
  const waiting: Seen[] = [];
  let mode: (r: Seen) => Mode = () => 'now';

  const answerBytes = (r: Seen, extra = ''): Buffer => {
    const body = `${r.method} ${r.host}${r.target}`;
    return Buffer.from(`HTTP/1.1 200 OK\r\n${extra}content-length: ${body.length}\r\n\r\n${body}`, 'latin1');
  };

  before(() => {
    front = listenFront({ host: '127.0.0.1', port: 0, batch: 4, maxConnections: 64 }, (n) => {
      const { rx, meta, tx } = front;
      const s = (off: number, len: number) => rx.toString('latin1', meta[off], meta[off] + meta[len]);
      let at = 0;
      for (let i = 0; i < n; i++) {
        const m = i * FIELDS;
        const target = s(m + M.TARGET_OFF, m + M.TARGET_LEN);
        const r: Seen = {
          method: s(m + M.METHOD_OFF, m + M.METHOD_LEN),
          host: s(m + M.HOST_OFF, m + M.HOST_LEN),
          target,
          path: target.slice(0, meta[m + M.PATH_LEN]),
          ua: s(m + M.UA_OFF, m + M.UA_LEN),
          ae: s(m + M.AE_OFF, m + M.AE_LEN),
          cookie: s(m + M.COOKIE_OFF, m + M.COOKIE_LEN),
          head: s(m + M.HEAD_OFF, m + M.HEAD_LEN),
          flags: meta[m + M.FLAGS],
          peer: meta[m + M.PEER] >>> 0,
          slot: meta[m + M.SLOT],
          gen: meta[m + M.GEN],
        };
        seen.push(r);
        const how = mode(r);
        if (how === 'close') {
          meta[m + M.TX_LEN] = -1;
        } else if (how === 'later') {
          meta[m + M.TX_LEN] = 0;
          waiting.push(r);
        } else {
          const bytes = answerBytes(r);
          tx.set(bytes, at);
          meta[m + M.TX_OFF] = at;
          meta[m + M.TX_LEN] = bytes.length;
          at += bytes.length;
        }
      }
    });
  });
  after(() => front.close());

  /** Writes the chunks in turn (a loop turn between them), reads until `count` answers came, or the close. */
  const converse = (
    chunks: (string | Buffer)[],
    count: number,
    opts: { untilClose?: boolean; onAnswer?: (a: Answer) => void } = {},
  ): Promise<{ answers: Answer[]; closed: boolean }> =>
    new Promise((resolve, reject) => {
      const sock = connect(front.port, '127.0.0.1');
      sock.setNoDelay(true);
      const answers: Answer[] = [];
      let buf = Buffer.alloc(0);
      let closed = false;
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error(`no ${count} answers in 60 s (${answers.length}; ${buf.toString('latin1')})`));
      }, 60_000);
      const finish = () => {
        clearTimeout(timer);
        sock.destroy();
        resolve({ answers, closed });
      };
      const parse = () => {
        for (;;) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          const lines = buf.toString('latin1', 0, end).split('\r\n');
          const headers = new Map<string, string>();
          for (const l of lines.slice(1)) {
            const c = l.indexOf(':');
            headers.set(l.slice(0, c).toLowerCase(), l.slice(c + 1).trim());
          }
          const len = Number(headers.get('content-length') ?? 0);
          if (buf.length < end + 4 + len) return;
          const a = {
            status: Number(lines[0].split(' ')[1]),
            headers,
            body: buf.toString('latin1', end + 4, end + 4 + len),
          };
          answers.push(a);
          opts.onAnswer?.(a);
          buf = buf.subarray(end + 4 + len);
        }
      };
      sock.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        parse();
        if (answers.length >= count && !opts.untilClose) finish();
      });
      sock.on('error', () => {});
      sock.on('close', () => {
        closed = true;
        finish();
      });
      void (async () => {
        for (const c of chunks) {
          if (sock.destroyed) return;
          sock.write(c);
          await new Promise((r) => setImmediate(r));
        }
      })();
    });

  const req = (path: string, headers = 'host: a.example\r\n') => `GET ${path} HTTP/1.1\r\n${headers}\r\n`;

  test('hands JavaScript the method, host, target, path, a few headers, the head and the peer', async () => {
    seen.length = 0;
    const head =
      'GET /static/a.css?v=1 HTTP/1.1\r\nHost: cache.example.org\r\nUser-Agent: t/1 \r\nAccept-Encoding: gzip\r\n' +
      'Cookie: a=1\r\nX-Other: y\r\n\r\n';
    const { answers, closed } = await converse([head], 1);
    assert.equal(closed, false);
    assert.equal(answers[0].status, 200);
    assert.equal(answers[0].body, 'GET cache.example.org/static/a.css?v=1');
    const r = seen[0];
    assert.deepEqual(
      [r.method, r.host, r.target, r.path, r.ua, r.ae, r.cookie, r.head],
      ['GET', 'cache.example.org', '/static/a.css?v=1', '/static/a.css', 't/1', 'gzip', 'a=1', head],
    );
    assert.equal(r.flags & FLAG.KEEP_ALIVE, FLAG.KEEP_ALIVE);
    assert.equal(r.peer, 0x7f000001);
  });

  test('keeps the connection for the next request, and answers pipelined requests in order', async () => {
    seen.length = 0;
    const { answers, closed } = await converse(
      [req('/1'), req('/2') + req('/3') + req('/4') + req('/5') + req('/6')],
      6,
    );
    assert.equal(closed, false);
    assert.deepEqual(
      answers.map((a) => a.body),
      ['/1', '/2', '/3', '/4', '/5', '/6'].map((p) => `GET a.example${p}`),
    );
    assert.equal(new Set(seen.map((r) => `${r.slot}/${r.gen}`)).size, 1); // one connection
  });

  test('many connections at once, each pipelining: batches fill, every answer in its order on its connection', async () => {
    seen.length = 0;
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, c) => converse([req(`/${c}/a`) + req(`/${c}/b`) + req(`/${c}/c`)], 3)),
    );
    results.forEach(({ answers }, c) =>
      assert.deepEqual(
        answers.map((a) => a.body),
        ['a', 'b', 'c'].map((x) => `GET a.example/${c}/${x}`),
      ),
    );
    assert.equal(seen.length, 72);
  });

  test('parses a head split across reads, also inside the blank line, and ignores a leading empty line', async () => {
    seen.length = 0;
    const head = '\r\nGET /split?q=1 HTTP/1.1\r\nHost: s.example\r\nUser-Agent: u\r\n\r\n';
    const cuts = [1, 5, 9, 20, 31, head.length - 3, head.length - 2, head.length - 1];
    const chunks = cuts.map((c, i) => head.slice(i === 0 ? 0 : cuts[i - 1], c)).concat(head.slice(cuts.at(-1)));
    const { answers } = await converse(chunks, 1);
    assert.equal(answers[0].body, 'GET s.example/split?q=1');
    assert.equal(seen.length, 1);
    assert.equal(seen[0].ua, 'u');
  });

  const refusals: [string, string, number][] = [
    ['a bare LF', 'GET / HTTP/1.1\nhost: a\n\n', 400],
    ['a bare CR after the version', 'GET / HTTP/1.1\rXhost: a\r\n\r\n', 400],
    ['a bare CR at a line start', 'GET / HTTP/1.1\r\nhost: a\r\n\rX: y\r\n\r\n', 400],
    ['a bare LF in a field', 'GET / HTTP/1.1\r\nhost: a\nx: y\r\n\r\n', 400],
    ['an obs-fold line', 'GET / HTTP/1.1\r\nhost: a\r\nx: y\r\n  z\r\n\r\n', 400],
    ['whitespace before the colon', 'GET / HTTP/1.1\r\nhost : a\r\n\r\n', 400],
    ['no Host in HTTP/1.1', 'GET / HTTP/1.1\r\nx: y\r\n\r\n', 400],
    ['two Host fields', 'GET / HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n', 400],
    ['a bad method', 'G(T / HTTP/1.1\r\nhost: a\r\n\r\n', 400],
    ['no version', 'GET /\r\nhost: a\r\n\r\n', 400],
    ['an absolute-form target', 'GET http://a/ HTTP/1.1\r\nhost: a\r\n\r\n', 400],
    ['a control character in a value', 'GET / HTTP/1.1\r\nhost: a\r\nx: a\x01b\r\n\r\n', 400],
    ['conflicting Content-Length', 'GET / HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\ncontent-length: 1\r\n\r\n', 400],
    ['a non-numeric Content-Length', 'GET / HTTP/1.1\r\nhost: a\r\ncontent-length: +0\r\n\r\n', 400],
    ['HTTP/2.0', 'GET / HTTP/2.0\r\nhost: a\r\n\r\n', 505],
    ['a body (Content-Length)', 'POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n\r\nhello', 413],
    ['Transfer-Encoding', 'POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n', 501],
    ['a head of more than MAX_HEAD bytes', `GET / HTTP/1.1\r\nhost: a\r\nx: ${'a'.repeat(9000)}\r\n\r\n`, 431],
    ['an unended head filling the buffer', `GET / HTTP/1.1\r\nhost: a\r\nx: ${'a'.repeat(20_000)}`, 431],
    ['more than MAX_FIELDS lines', `GET / HTTP/1.1\r\nhost: a\r\n${'x: y\r\n'.repeat(101)}\r\n`, 431],
  ];
  for (const [what, head, status] of refusals)
    test(`refuses ${what} with ${status} and closes, the handler never called`, async () => {
      seen.length = 0;
      const { answers, closed } = await converse([head], 1, { untilClose: true });
      assert.equal(closed, true);
      assert.deepEqual(
        answers.map((a) => [a.status, a.headers.get('connection')]),
        [[status, 'close']],
      );
      assert.equal(seen.length, 0);
    });

  test('a refusal after a good request: the first answered, then the refusal, then the close', async () => {
    seen.length = 0;
    const { answers, closed } = await converse([req('/ok') + 'BAD\r\n\r\n'], 2, { untilClose: true });
    assert.equal(closed, true);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 400],
    );
  });

  test('closes after answering Connection: close, and HTTP/1.0 without keep-alive', async () => {
    for (const head of [
      req('/c', 'host: a\r\nconnection: Close\r\n'),
      'GET /ten HTTP/1.0\r\n\r\n',
      req('/c2', 'host: a\r\nconnection: close\r\n') + req('/never'),
    ]) {
      seen.length = 0;
      const { answers, closed } = await converse([head], 1, { untilClose: true });
      assert.equal(closed, true, head);
      assert.equal(answers.length, 1, head);
      assert.equal(seen.length, 1, head);
      assert.equal(seen[0].flags & FLAG.KEEP_ALIVE, 0);
    }
    seen.length = 0;
    const { closed } = await converse(['GET /ka HTTP/1.0\r\nconnection: keep-alive\r\n\r\n', req('/next')], 2);
    assert.equal(closed, false);
    assert.equal(seen[0].flags & (FLAG.KEEP_ALIVE | FLAG.HTTP10), FLAG.KEEP_ALIVE | FLAG.HTTP10);
  });

  test('answers a request after its batch with respond(), then parses what was pipelined behind it', async () => {
    seen.length = 0;
    waiting.length = 0;
    mode = (r) => (r.path === '/later' ? 'later' : 'now');
    try {
      const done = converse([req('/later') + req('/after')], 2, {
        onAnswer: () => {},
      });
      // answer the waiting request once it is there (bounded by converse's timeout)
      while (waiting.length === 0) await new Promise((r) => setImmediate(r));
      const r = waiting[0];
      assert.equal(seen.length, 1); // the pipelined request waits behind it
      assert.equal(front.respond(r.slot, r.gen, answerBytes(r, 'x-late: 1\r\n')), true);
      assert.equal(front.respond(r.slot, r.gen, answerBytes(r)), false); // answered already
      const { answers } = await done;
      assert.deepEqual(
        answers.map((a) => [a.body, a.headers.get('x-late')]),
        [
          ['GET a.example/later', '1'],
          ['GET a.example/after', undefined],
        ],
      );
    } finally {
      mode = () => 'now';
    }
  });

  test('closes the connection when the handler answers -1; respond() to it is refused', async () => {
    seen.length = 0;
    mode = () => 'close';
    try {
      const { answers, closed } = await converse([req('/x')], 1, { untilClose: true });
      assert.equal(closed, true);
      assert.equal(answers.length, 0);
      assert.equal(front.respond(seen[0].slot, seen[0].gen, Buffer.from('x')), false);
    } finally {
      mode = () => 'now';
    }
  });
});
