import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '../testing/prng.js';
import { parsePeerAddress } from './ip.js';
import {
  compileExpression,
  EXPRESSION_FIELDS,
  EXPRESSION_LIMITS,
  ExpressionError,
  expressionProblem,
  type ExpressionRequest,
} from './expression.js';

function req(o: Partial<Omit<ExpressionRequest, 'peer'>> & { ip?: string } = {}): ExpressionRequest {
  return {
    method: o.method ?? 'GET',
    host: o.host ?? 'www.example.org',
    path: o.path ?? '/',
    query: o.query ?? '',
    scheme: o.scheme ?? 'http',
    headers: o.headers ?? [],
    peer: parsePeerAddress(o.ip ?? '203.0.113.7'),
  };
}
const run = (source: string, r: ExpressionRequest) => compileExpression(source).test(r);

test('the issue example: a wildcard path and a negated CIDR list', () => {
  const e = compileExpression('http.request.uri.path wildcard "/admin/*" and not ip.src in {10.0.0.0/8}');
  assert.equal(e.test(req({ path: '/admin/users' })), true);
  assert.equal(e.test(req({ path: '/ADMIN/users' })), true, 'wildcard is case-insensitive');
  assert.equal(e.test(req({ path: '/admin/users', ip: '10.1.2.3' })), false);
  assert.equal(e.test(req({ path: '/public' })), false);
});

test('every field reads its part of the request', () => {
  const r = req({
    method: 'POST',
    host: 'api.example.org',
    path: '/v1/items',
    query: 'a=1&b=2',
    scheme: 'https',
    ip: '2001:db8::5',
    headers: [
      ['user-agent', 'curl/8.5'],
      ['referer', 'https://ref.example/'],
      ['cookie', 'session=abc'],
      ['x-forwarded-for', '198.51.100.1'],
      ['x-api-key', 'K1'],
    ],
  });
  const yes = [
    'http.host eq "api.example.org"',
    'http.request.method == "POST"',
    'http.request.uri eq "/v1/items?a=1&b=2"',
    'http.request.uri.path eq "/v1/items"',
    'http.request.uri.query contains "b=2"',
    'http.request.full_uri eq "https://api.example.org/v1/items?a=1&b=2"',
    'http.request.version eq "HTTP/1.1"',
    'http.user_agent contains "curl"',
    'http.referer wildcard "https://ref.example/*"',
    'http.cookie contains "session="',
    'http.x_forwarded_for eq "198.51.100.1"',
    'http.request.headers["X-API-Key"] eq "K1"',
    'http.request.headers["missing"] eq ""',
    'ip.src in {2001:db8::/32}',
    'ip.src eq 2001:db8::5',
    'ssl',
    'not not ssl',
    'len(http.request.uri.path) eq 9',
    'lower(http.user_agent) eq "curl/8.5"',
    'upper(http.request.method) == "POST"',
  ];
  for (const s of yes) assert.equal(run(s, r), true, s);
  assert.equal(run('ssl', req()), false);
  // Each field of the table is exercised above.
  for (const f of Object.keys(EXPRESSION_FIELDS))
    assert.ok(
      yes.some((s) => s.includes(f)),
      f,
    );
});

test('operators on strings, integers and addresses', () => {
  const r = req({ path: '/a/b.php', ip: '192.0.2.10', headers: [['user-agent', 'Mozilla/5.0']] });
  const cases: [string, boolean][] = [
    ['http.request.uri.path ne "/x"', true],
    ['http.request.uri.path != "/a/b.php"', false],
    ['http.request.uri.path lt "/b"', true],
    ['http.request.uri.path le "/a/b.php"', true],
    ['http.request.uri.path gt "/a"', true],
    ['http.request.uri.path >= "/z"', false],
    ['http.request.uri.path < "/b" && http.request.uri.path > "/a"', true],
    ['http.request.uri.path strict wildcard "/A/*"', false],
    ['http.request.uri.path strict wildcard "/a/*.php"', true],
    ['http.request.uri.path wildcard "*.PHP"', true],
    ['http.request.uri.path matches "\\.php$"', true],
    ['http.request.uri.path ~ "^/a/[a-z]+\\.php$"', true],
    ['http.request.uri.path matches "\\d"', false],
    ['http.request.uri.path in {"/x" "/a/b.php"}', true],
    ['http.request.uri.path in {"/x", "/y"}', false],
    ['http.user_agent contains "Mozilla"', true],
    ['len(http.user_agent) in {1..5 11}', true],
    ['len(http.user_agent) in {1..5 12..20}', false],
    ['len(http.user_agent) gt 10 and len(http.user_agent) lt 12', true],
    ['len(http.user_agent) ne 11', false],
    ['len(http.user_agent) >= 11', true],
    ['len(http.user_agent) <= 10', false],
    ['ip.src in {192.0.2.0/24}', true],
    ['ip.src in {192.0.2.1..192.0.2.9 198.51.100.0/24}', false],
    ['ip.src in {192.0.2.1..192.0.2.10}', true],
    ['ip.src eq 192.0.2.10', true],
    ['ip.src ne 192.0.2.0/28', false],
    ['ip.src in {::ffff:192.0.2.10}', true],
    ['http.request.uri.path eq "/x" or ssl or ip.src eq 192.0.2.10', true],
    ['ssl xor ip.src eq 192.0.2.10', true],
    ['ssl ^^ ip.src eq 192.0.2.10 ^^ http.request.uri.path eq "/a/b.php"', false],
    ['!ssl || http.host eq "nope"', true],
    ['not (ssl or http.host eq "www.example.org")', false],
    ['http.request.uri.path eq "/a/b.php" and (ssl or ip.src eq 192.0.2.10)', true],
    ['ip.src eq 192.0.2.10 or ip.src eq 1.1.1.1 and ssl', true],
    ['(ip.src eq 192.0.2.10 or ip.src eq 1.1.1.1) and ssl', false],
    ['http.request.headers["x"] eq "say \\"hi\\" \\\\"', false],
  ];
  for (const [s, want] of cases) assert.equal(run(s, r), want, s);
  const quoted = req({ headers: [['x', 'say "hi" \\']] });
  assert.equal(run('http.request.headers["x"] eq "say \\"hi\\" \\\\"', quoted), true);
  assert.equal(run('http.request.uri.path eq "/"\n  and\n  not ssl', req()), true, 'new lines are blanks');
});

/** The position and message of the error compiling `source`. */
function errorOf(source: string): { line: number; column: number; offset: number; message: string } {
  const e = expressionProblem(source);
  assert.ok(e instanceof ExpressionError, `${source} compiled`);
  return { line: e.line, column: e.column, offset: e.offset, message: e.message };
}

test('syntax errors name the line, the column and what was expected', () => {
  const cases: [string, number, number, RegExp][] = [
    ['http.request.uri.path', 1, 22, /expected an operator after http\.request\.uri\.path \(eq, ne.*\), found the end/],
    ['http.request.uri.pathx eq "/"', 1, 1, /unknown field "http\.request\.uri\.pathx"/],
    ['http.host eq', 1, 13, /expected a string in double quotes, found the end of the expression/],
    ['http.host eq "a', 1, 14, /unterminated string/],
    ['http.host eq "a" and', 1, 21, /expected a field/],
    [
      'http.host eq "a" http.host eq "b"',
      1,
      18,
      /expected "and", "or", "xor" or the end of the expression, found "http\.host"/,
    ],
    ['(http.host eq "a"', 1, 18, /expected "\)" closing the "\(" at line 1, column 1/],
    ['http.host eq "a"\nand ip.src in {10.0.0.0/33}', 2, 16, /invalid CIDR "10\.0\.0\.0\/33": prefix longer than 32/],
    ['http.host\n  matches "(a)\\1"', 2, 11, /invalid regex for the linear-time engine/],
    ['ip.src contains "x"', 1, 8, /"contains" does not apply to ip\.src \(ip\)/],
    ['ssl eq "x"', 1, 5, /ssl is a boolean field/],
    ['len(ip.src) eq 1', 1, 5, /len\(\) takes a string field; ip\.src is ip/],
    ['len(http.host) eq "x"', 1, 19, /expected an integer, found a string/],
    ['http.host in {}', 1, 15, /empty list/],
    ['http.host in {"a" 1}', 1, 19, /expected a string in double quotes or "}"/],
    ['http.host in {"a"', 1, 18, /expected "}" closing the list/],
    ['len(http.host) in {5..2}', 1, 20, /range 5\.\.2 ends before it starts/],
    ['ip.src in {1.2.3.4..::1}', 1, 12, /mixes IPv4 and IPv6/],
    ['http.host strict "x"', 1, 18, /expected "wildcard" after "strict"/],
    ['http.request.headers[x] eq "1"', 1, 22, /expected a header name in quotes/],
    ['http.host eq "a" and eq "b"', 1, 22, /expected a field before "eq"/],
    ['http.host eq 10.0.0.1', 1, 14, /expected a string in double quotes, found "10\.0\.0\.1"/],
    ['', 1, 1, /the expression is empty/],
  ];
  for (const [source, line, column, message] of cases) {
    const e = errorOf(source);
    assert.deepEqual([e.line, e.column], [line, column], `${source}: ${e.message}`);
    assert.match(e.message, message, source);
    assert.ok(e.message.startsWith(`line ${line}, column ${column}: `), e.message);
  }
});

test('bounds: length, nesting, lists, regexes, strings, comparisons', () => {
  const L = EXPRESSION_LIMITS;
  const cmp = 'http.host eq "a"';
  assert.match(errorOf(`${cmp} or `.repeat(400) + cmp).message, /longer than 4096 characters/);
  // Nesting: exactly the limit compiles, one more is refused at the paren that crosses it.
  const nested = (n: number) => '('.repeat(n) + cmp + ')'.repeat(n);
  assert.equal(expressionProblem(nested(L.maxDepth)), undefined);
  const deep = errorOf(nested(L.maxDepth + 1));
  assert.match(deep.message, /nested deeper than 32 levels/);
  assert.equal(deep.offset, L.maxDepth);
  assert.match(errorOf('not '.repeat(L.maxDepth + 1) + cmp).message, /nested deeper/);
  assert.match(
    errorOf('len('.repeat(40) + 'http.host' + ')'.repeat(40) + ' eq 1').message,
    /nested deeper|takes a string/,
  );
  assert.match(errorOf('!'.repeat(1000) + cmp).message, /nested deeper/);
  assert.match(errorOf('('.repeat(4000)).message, /nested deeper/);
  // Lists: per list and per expression.
  const ips = (n: number, base = 0) =>
    Array.from({ length: n }, (_, i) => `10.${(base + i) >> 8}.${(base + i) & 255}.1`).join(' ');
  assert.equal(expressionProblem(`ip.src in {${ips(300)}}`), undefined);
  const longList = `len(http.host) in {${'1 '.repeat(L.maxListEntries + 1)}}`;
  assert.ok(longList.length < L.maxLength);
  assert.match(errorOf(longList).message, /list longer than 1024 entries/);
  // Strings and regexes.
  assert.match(errorOf(`http.host eq "${'a'.repeat(L.maxStringLength + 1)}"`).message, /string longer than 1024/);
  const regexes = (n: number) => Array.from({ length: n }, (_, i) => `http.host matches "^a${i}"`).join(' or ');
  assert.equal(expressionProblem(regexes(L.maxRegexes)), undefined);
  assert.match(errorOf(regexes(L.maxRegexes + 1)).message, /more than 8 regexes/);
  assert.match(errorOf('http.host matches "((a{100}){100}){100}"').message, /linear-time engine/);
  assert.match(errorOf(`${'ssl or '.repeat(L.maxComparisons)}ssl`).message, /more than 256 comparisons/);
  assert.match(errorOf('ip.src eq ' + '1'.repeat(101)).message, /literal longer than 100/);
});

test('a pathological regex and long inputs are answered in linear time', () => {
  const e = compileExpression('http.request.uri.path matches "^/(a+)+$" or http.user_agent wildcard "*a*a*a*a*b"');
  const path = `/${'a'.repeat(100_000)}!`;
  assert.equal(e.test(req({ path, headers: [['user-agent', 'a'.repeat(100_000)]] })), false);
  assert.equal(e.test(req({ path: '/aaaa' })), true);
});

test('fuzz: random and mutated expressions compile or fail with an ExpressionError, never otherwise; compiled ones answer odd requests', () => {
  const rnd = prng(13);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)];
  const atoms = [
    'http.host',
    'ip.src',
    'ssl',
    'http.request.uri.path',
    'len(',
    'lower(',
    'http.request.headers[',
    '"x"',
    '"/a/*"',
    '10.0.0.0/8',
    '::1',
    '1..5',
    '7',
    'eq',
    '==',
    '!=',
    'ne',
    'lt',
    '<',
    '>=',
    'contains',
    'wildcard',
    'strict',
    'matches',
    '~',
    'in',
    '{',
    '}',
    '(',
    ')',
    '[',
    ']',
    'and',
    'or',
    'xor',
    'not',
    '!',
    '&&',
    '||',
    '^^',
    ',',
    '\\',
    '"',
    '\n',
    ' ',
    'é',
    '\u0000',
    '"(a)\\1"',
    '"[a-"',
    '999999999999999999',
  ];
  const valid = [
    'http.request.uri.path wildcard "/admin/*" and not ip.src in {10.0.0.0/8}',
    '(http.host eq "a" or lower(http.user_agent) contains "bot") and len(http.request.uri.query) gt 100',
    'http.request.headers["x-a"] matches "^[0-9]+$" xor ssl',
  ];
  const chars = 'aZ/.*?%é\u0000"\\ ';
  const text = (n: number) => Array.from({ length: n }, () => pick([...chars])).join('');
  const requests = [
    req({ path: '/admin/x', headers: [['x-a', '12']] }),
    req({ path: '', host: '', method: '', query: text(30), ip: '::1', scheme: 'https' }),
    req({
      path: `/${text(200)}`,
      ip: 'not-an-address',
      headers: [
        ['user-agent', text(50)],
        ['x-a', text(10)],
      ],
    }),
  ];
  let compiled = 0;
  for (let i = 0; i < 5000; i++) {
    let source: string;
    if (i % 2 === 0) {
      source = Array.from({ length: 1 + Math.floor(rnd() * 12) }, () => pick(atoms)).join(rnd() < 0.7 ? ' ' : '');
    } else {
      const base = pick(valid);
      const at = Math.floor(rnd() * base.length);
      const cut = Math.floor(rnd() * 4);
      source = base.slice(0, at) + (rnd() < 0.5 ? pick(atoms) : '') + base.slice(at + cut);
    }
    try {
      const e = compileExpression(source);
      for (const r of requests) assert.equal(typeof e.test(r), 'boolean', source);
      compiled++;
    } catch (err) {
      assert.ok(err instanceof ExpressionError, `${JSON.stringify(source)} threw ${String(err)}`);
      assert.ok(err.offset >= 0 && err.offset <= source.length, JSON.stringify(source));
      assert.ok(err.line >= 1 && err.column >= 1);
    }
  }
  assert.ok(compiled > 100, `only ${compiled} compiled`);
});
