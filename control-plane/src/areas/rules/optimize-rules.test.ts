// optimize rules through the API: the compression fields' defaults read back, bad or oversized values are 400 naming
// the field with nothing stored, and the plan gate (403 naming the feature).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { domains } from '../../db/schema.js';
import { setPlan } from '../../plans/subscriptions.js';

test('optimize rules API', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'optimize-api.example.org');
  const url = `/domains/${name}/rules/optimize/`;
  const free = await cp.call(owner.key, 'POST', url, {});
  assert.equal(free.statusCode, 403);
  assert.equal(free.json().feature, 'rule_type:optimize');

  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  await setPlan(cp.database.db, dom.id, 'enterprise');
  const made = await cp.call(owner.key, 'POST', url, {
    content_types: ['Text/*'],
    minify_js: true,
    markdown_for_agents: true,
  });
  assert.equal(made.statusCode, 200, made.body);
  const r = made.json();
  assert.deepEqual(
    [r.compression, r.content_types, r.min_size, r.minify_js, r.minify_html, r.markdown_for_agents, r.image_format],
    [['br', 'gzip'], ['text/*'], 1024, true, false, true, 'original'],
  );
  const off = await cp.call(owner.key, 'PUT', `${url}${r.id}`, { compression: [] });
  assert.equal(off.statusCode, 200, off.body);
  assert.deepEqual(off.json().compression, []);

  const count = async () => (await cp.call(owner.key, 'GET', url)).json<unknown[]>().length;
  const before = await count();
  for (const [body, field] of [
    [{ compression: ['deflate'] }, 'compression'],
    [{ markdown_for_agents: 'yes' }, 'markdown_for_agents'],
    [{ markdown: true }, 'markdown'],
    [{ compression: ['br', 'br'] }, 'compression'],
    [{ compression: 'br' }, 'compression'],
    [{ content_types: ['html'] }, 'content_types'],
    [{ content_types: ['*/*'] }, 'content_types'],
    [{ content_types: Array.from({ length: 100_000 }, () => 'text/html') }, 'content_types'],
    [{ content_types: [`text/${'x'.repeat(100_000)}`] }, 'content_types'],
    [{ min_size: -1 }, 'min_size'],
    [{ min_size: 2 ** 40 }, 'min_size'],
    [{ brotli_quality: 11 }, 'brotli_quality'],
  ] as const) {
    const res = await cp.call(owner.key, 'POST', url, body);
    assert.equal(res.statusCode, 400, field);
    assert.ok(res.json().error.includes(field), `${field}: ${res.body.slice(0, 200)}`);
  }
  assert.equal(await count(), before);
});
