// RequestContext's reads of the request: header() gives the first value of a name, as the phases have always read it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from './context.js';

test('header(): the first line of the name (lower case, as the fronts give names), undefined without one', () => {
  const ctx = new RequestContext({
    method: 'GET',
    host: 'example.org',
    path: '/',
    query: '',
    headers: [
      ['host', 'example.org'],
      ['cookie', 'a=1'],
      ['x-empty', ''],
      ['cookie', 'b=2'],
    ],
    peer: parsePeerAddress('192.0.2.1'),
    scheme: 'http',
    startedAt: 0,
  });
  assert.deepEqual(
    ['cookie', 'x-empty', 'host', 'Cookie', 'user-agent'].map((n) => ctx.header(n)),
    ['a=1', '', 'example.org', undefined, undefined],
  );
  ctx.headers = [];
  assert.equal(ctx.header('cookie'), undefined);
});
