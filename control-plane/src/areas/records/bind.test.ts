// Master-file tokenizer, parser and exporter: table tests and a seeded round trip (export → parse → same records).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tokenize } from './bind-tokenizer.js';
import { parseTtl, parseZoneFile } from './bind-parse.js';
import { exportZone, quoteTxt } from './bind-export.js';
import { buildRecord } from './normalize.js';
import type { RecordCreate, StoredRecord } from './types.js';
import { prng } from '@platform/shared/testing/prng';

const ZONE = 'example.org';
const HEADER = {
  zone: ZONE,
  serial: 7,
  nameservers: ['ns1.platform.test', 'ns2.platform.test'],
  nsTtl: 3600,
  soa: {
    mname: 'ns1.platform.test',
    rname: 'hostmaster.example.org',
    refresh: 10000,
    retry: 2400,
    expire: 604800,
    minimum: 300,
    ttl: 3600,
  },
};

test('quoteTxt splits at 255 bytes and escapes quotes, backslashes and non-ASCII bytes', () => {
  assert.equal(quoteTxt('a"b\\c'), '"a\\"b\\\\c"');
  assert.equal(quoteTxt('é'), '"\\195\\169"');
  assert.equal(quoteTxt(''), '""');
  const parts = quoteTxt('x'.repeat(600)).split(' ');
  assert.deepEqual(
    parts.map((p) => p.length - 2),
    [255, 255, 90],
  );
});

test('parseTtl: seconds and BIND units', () => {
  for (const [s, want] of [
    ['300', 300],
    ['1h', 3600],
    ['1h30m', 5400],
    ['2D', 172800],
    ['1w', 604800],
    ['A', null],
    ['1x', null],
  ] as const) {
    assert.equal(parseTtl(s), want, s);
  }
});

test('tokenizer: parentheses join lines, comments, blank owners, quoted strings', () => {
  const { entries, errors } = tokenize(
    'a IN TXT ( "x ; y" ; inner\n  "z" ) ; last\n\tIN A 192.0.2.1\n; only a comment\n',
  );
  assert.deepEqual(errors, []);
  assert.equal(entries.length, 2);
  assert.deepEqual(
    entries[0]!.tokens.map((t) => [t.text, t.quoted]),
    [
      ['a', false],
      ['IN', false],
      ['TXT', false],
      ['x ; y', true],
      ['z', true],
    ],
  );
  assert.equal(entries[0]!.comment, 'last');
  assert.equal(entries[1]!.blankOwner, true);
  assert.equal(entries[1]!.line, 3);
  assert.deepEqual(tokenize('a IN A 1.2.3.4 )').errors, [{ line: 1, error: 'unbalanced ")"' }]);
  assert.deepEqual(tokenize('a IN SOA ( 1 2\n').errors, [
    { line: 2, error: 'unbalanced "(": missing ")" before the end of the file' },
  ]);
});

test('parser: directives and line errors', () => {
  const r = parseZoneFile(
    ZONE,
    [
      '$INCLUDE other.zone',
      'www IN A 192.0.2.1 ; platform: {"proxied":true,"comment":"hi"}',
      'x IN A 192.0.2.2 ; platform: {"bogus":1}',
      'y IN MX ten mail',
      ' IN A 192.0.2.3',
      '$ORIGIN sub',
      'z IN CNAME @',
    ].join('\n'),
  );
  assert.deepEqual(r.errors, [
    { line: 1, error: 'directive $INCLUDE is not supported' },
    { line: 3, error: 'unknown field "bogus" in the "; platform:" comment' },
    { line: 4, error: 'MX preference must be a number' },
  ]);
  assert.deepEqual(
    r.records.map((x) => [x.line, x.input.name, x.input.type, x.input.destination, x.input.proxied, x.input.comment]),
    [
      [2, 'www.example.org.', 'A', '192.0.2.1', true, 'hi'],
      [5, 'y.example.org.', 'A', '192.0.2.3', undefined, undefined],
      [7, 'z.sub.example.org.', 'CNAME', 'sub.example.org.', undefined, undefined],
    ],
  );
});

test('seeded round trip: export then parse yields the same records, every field', () => {
  const rand = prng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const int = (n: number) => Math.floor(rand() * n);
  const chars = 'abc XYZ;"\\()é\t$@0';
  const records: StoredRecord[] = [];
  for (let i = 0; i < 400; i++) {
    const type = pick(['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SRV', 'CAA', 'PTR'] as const);
    const name = type === 'CNAME' ? `c${i}` : pick(['@', 'www', '*.dev', `h${int(20)}`, '_svc._tcp', 'a.b']);
    const input: RecordCreate = {
      name: type === 'NS' && name === '@' ? 'sub' : name,
      type,
      destination: '',
      ttl: 1 + int(604800),
    };
    switch (type) {
      case 'A':
        input.destination = `192.0.2.${int(256)}`;
        input.proxied = rand() < 0.5;
        break;
      case 'AAAA':
        input.destination = `2001:db8::${int(65536).toString(16)}`;
        break;
      case 'CNAME':
        input.destination = `t${int(9)}.example.net`;
        input.scheme = pick(['Http', 'Https', 'Auto']);
        input.port = int(70000);
        break;
      case 'MX':
      case 'NS':
      case 'PTR':
        input.destination = `h${int(9)}.example.org`;
        input.mx_priority = int(65536);
        break;
      case 'TXT':
        input.destination = Array.from({ length: 1 + int(400) }, () => pick([...chars])).join('');
        break;
      case 'SRV':
        input.destination = `${int(65536)} ${int(65536)} ${pick(['.', 'sip.example.org'])}`;
        input.mx_priority = int(65536);
        break;
      case 'CAA':
        input.destination = pick(['0 issue "letsencrypt.org"', '128 issuewild ";"', '0 iodef "https://example.org/r"']);
        break;
    }
    if (rand() < 0.3) input.comment = Array.from({ length: int(50) }, () => pick([...chars, '\n'])).join('');
    if (rand() < 0.2) {
      input.timeout = 1 + int(1800);
      input.monitor = true;
      input.captcha = true;
    }
    if (rand() < 0.2) {
      input.host_header = 'origin.example.net';
      input.host_header_mode = 'target';
    }
    records.push({ ...buildRecord(ZONE, input), id: i + 1 });
  }
  const text = exportZone(HEADER, records);
  const parsed = parseZoneFile(ZONE, text);
  assert.deepEqual(parsed.errors, []);
  assert.equal(parsed.skipped.length, 3, 'SOA and the two apex NS');
  const back = parsed.records.map((p) => buildRecord(ZONE, p.input, { literalTxt: true }));
  const key = (r: object) => JSON.stringify(r);
  assert.deepEqual(back.map(key).sort(), records.map(({ id: _id, ...r }) => key(r)).sort());
});
