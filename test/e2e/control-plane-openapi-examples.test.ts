// Every request example in the OpenAPI document works as written: the API reference shows them, and the fuzzer's
// examples phase (scripts/api-fuzz.sh) sends them, so an example the server refuses misleads both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { setPlan } from '../../control-plane/src/plans/subscriptions.js';
import { CREATE_EXAMPLES } from '../../control-plane/src/areas/rules/schemas.js';
import { RULE_TYPES } from '@platform/shared/match';

interface MediaType {
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface Operation {
  requestBody?: { content?: Record<string, MediaType> };
}

/** The media type's `example` and the values of its `examples` (@fastify/swagger moves a schema's examples there). */
function examplesOf(media: MediaType | undefined): unknown[] {
  if (!media) return [];
  return [
    ...(media.example !== undefined ? [media.example] : []),
    ...Object.values(media.examples ?? {}).map((e) => e.value),
  ];
}

test('every JSON request example of the document is accepted (200) on an enterprise domain', async (t) => {
  const cp = await startTestControlPlane(t);
  const u = await cp.user();
  const domain = await cp.domain(u.key, 'examples.example.org');
  const { id } = (await cp.call(u.key, 'GET', `/domains/${domain}`)).json() as { id: number };
  await setPlan(cp.database.db, id, 'enterprise');

  const doc = (await cp.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, Operation>>;
  };
  const sent: string[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      for (const example of examplesOf(op.requestBody?.content?.['application/json'])) {
        const url = path.replace('{domain}', domain);
        const res = await cp.call(u.key, method.toUpperCase() as 'POST', url, example);
        assert.equal(res.statusCode, 200, `${method.toUpperCase()} ${path}: ${res.body}`);
        sent.push(`${method.toUpperCase()} ${path}`);
      }
    }
  }
  // One create example per rule type, and the record's.
  for (const type of RULE_TYPES) assert.ok(sent.includes(`POST /domains/{domain}/rules/${type}/`), type);
  assert.ok(sent.includes('POST /domains/{domain}/records/'));
  assert.ok(sent.includes('POST /domains/{domain}/custom-rules/'));
  assert.equal(Object.keys(CREATE_EXAMPLES).length, RULE_TYPES.length + 1, 'the fifteen types and custom rules');
});
