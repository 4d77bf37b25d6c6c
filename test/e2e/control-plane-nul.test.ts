// U+0000 in a request string is 400 naming the field, and nothing is stored (found by schemathesis: a NUL in a
// record's destination or comment, or in a rule's field, answered 500: Postgres stores NUL neither in text nor in
// jsonb). The OpenAPI document says so with a pattern on every free-text string.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { NO_NUL_PATTERN, withoutNul } from '../../control-plane/src/plugins/no-nul.js';

test('request strings with U+0000 are 400, and documented', async (t) => {
  const cp = await startTestControlPlane(t);
  const u = await cp.user();
  const domain = await cp.domain(u.key, 'nul.example.org');
  const records = `/domains/${domain}/records/`;

  await t.test('records and rules: 400 naming the field; nothing stored', async () => {
    const nul = (field: string) => `${field} must be text without the NUL character (U+0000)`;
    const cases: [string, unknown, string][] = [
      [records, { type: 'TXT', name: 'www', destination: 'a\u0000b' }, nul('destination')],
      [records, { type: 'A', name: 'www', destination: '192.0.2.1', comment: 'a\u0000b' }, nul('comment')],
      [`/domains/${domain}/rules/redirect/`, { target: '/a', path_includes: ['/a\u0000'] }, nul('path_includes[0]')],
      // A hand-written pattern excludes U+0000 itself, and keeps its own message.
      [
        `/domains/${domain}/rules/redirect/`,
        { target: '/a\u0000b' },
        'target must be an absolute http(s) URL or a path starting with /',
      ],
    ];
    for (const [url, body, error] of cases) {
      const res = await cp.call(u.key, 'POST', url, body);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().error, error);
    }
    assert.deepEqual((await cp.call(u.key, 'GET', records)).json(), []);
    assert.deepEqual((await cp.call(u.key, 'GET', `/domains/${domain}/rules/redirect/`)).json(), []);
    // The same strings without the NUL are taken.
    const ok = await cp.call(u.key, 'POST', records, { type: 'TXT', name: 'www', destination: 'ab', comment: 'ab' });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  await t.test('the document shows the pattern on free-text strings only', async () => {
    const doc = (await cp.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const body = doc.paths['/domains/{domain}/records/'].post.requestBody.content['application/json'].schema;
    assert.equal(body.properties.destination.pattern, NO_NUL_PATTERN);
    assert.equal(body.properties.comment.anyOf?.[0]?.pattern ?? body.properties.comment.pattern, NO_NUL_PATTERN);
    assert.notEqual(body.properties.type.pattern, NO_NUL_PATTERN, 'a string with its own pattern keeps it');
  });

  await t.test('withoutNul keeps enums, formats, own patterns and values', () => {
    const schema = withoutNul({
      type: 'object',
      properties: {
        name: { type: 'string' },
        kind: { type: 'string', enum: ['a', 'b'] },
        at: { type: 'string', format: 'date-time' },
        list: { type: 'array', items: { type: ['string', 'null'] } },
      },
      default: { name: 'x' },
    });
    const p = schema.properties as Record<string, { pattern?: string; items?: { pattern?: string } }>;
    assert.equal(p.name!.pattern, NO_NUL_PATTERN);
    assert.equal(p.kind!.pattern, undefined);
    assert.equal(p.at!.pattern, undefined);
    assert.equal(p.list!.items!.pattern, NO_NUL_PATTERN);
    assert.deepEqual(schema.default, { name: 'x' });
  });
});
