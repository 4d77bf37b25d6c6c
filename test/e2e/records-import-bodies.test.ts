// The zone import and its preview take the master file as JSON `{ "zone": … }`, as a text/plain body, or as a
// multipart file upload in the field `file` (as Cloudflare's DNS import does), each bounded in size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordsFixture } from './records-helpers.js';

const ZONE = ['$ORIGIN example.org.', 'www 300 IN A 192.0.2.10', 'mail IN MX 10 mx.example.net.'].join('\n');

/** A multipart/form-data body as a browser or curl --form would send it. */
async function multipart(parts: Record<string, string | { text: string; filename: string }>) {
  const form = new FormData();
  for (const [name, value] of Object.entries(parts)) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, new Blob([value.text], { type: 'text/plain' }), value.filename);
  }
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')! },
  };
}

test('zone import bodies: JSON, text/plain and a multipart file', async (t) => {
  const f = await recordsFixture(t);
  const { cp, key, url } = f;
  const send = (path: string, payload: string | Buffer, headers: Record<string, string>, app = cp.app) =>
    app.inject({ method: 'POST', url: url(path), headers: { authorization: `Bearer ${key}`, ...headers }, payload });
  const names = async () =>
    ((await cp.call(key, 'GET', url())).json() as { name: string; type: string }[]).map((r) => `${r.name}/${r.type}`);

  await t.test('text/plain: the body is the master file', async () => {
    const preview = await send('import/parse', ZONE, { 'content-type': 'text/plain; charset=utf-8' });
    assert.equal(preview.statusCode, 200, preview.body);
    assert.equal(preview.json().records.length, 2);
    const res = await send('import', ZONE, { 'content-type': 'text/plain' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().created, 2);
    assert.deepEqual(await names(), ['www/A', 'mail/MX']);
  });

  await t.test('multipart/form-data: the file in the field "file" (curl --form file=@zone.txt)', async () => {
    const upload = await multipart({ file: { text: `${ZONE}\nftp IN CNAME www`, filename: 'example.org.zone' } });
    const preview = await send('import/parse', upload.payload, upload.headers);
    assert.equal(preview.statusCode, 200, preview.body);
    assert.deepEqual(
      preview.json().records.map((r: { name: string }) => r.name),
      ['ftp'],
    );
    const res = await send('import', upload.payload, upload.headers);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().created, 1);
    assert.equal(res.json().skipped.length, 2, 'the records imported before are identical');
    assert.deepEqual(await names(), ['www/A', 'mail/MX', 'ftp/CNAME']);
  });

  await t.test('bad uploads are refused with the error body, and nothing is stored', async () => {
    const cases: [Awaited<ReturnType<typeof multipart>>, number, RegExp][] = [
      [await multipart({}), 400, /^file is required$/],
      [await multipart({ file: { text: ZONE, filename: 'a' }, proxied: 'true' }), 400, /^unknown field proxied$/],
      [await multipart({ file: { text: '', filename: 'empty.zone' } }), 400, /^file must not be empty$/],
      // More parts than the one field: 400 as an unknown field (found by schemathesis: it was 413).
      [
        await multipart({ file: { text: ZONE, filename: 'a' }, other: { text: ZONE, filename: 'b' } }),
        400,
        /^an upload has one form field, file$/,
      ],
      [await multipart({ file: ZONE, a: '{}', b: '{}', c: 'false' }), 400, /^an upload has one form field, file$/],
    ];
    for (const [upload, status, error] of cases) {
      const res = await send('import', upload.payload, upload.headers);
      assert.equal(res.statusCode, status, res.body);
      assert.match(res.json().error, error);
    }
    const bad = await send('import', 'www IN A 999.0.0.1', { 'content-type': 'text/plain' });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error, 'the zone file has 1 invalid line; nothing was imported');
    assert.equal((await send('import', '', { 'content-type': 'text/plain' })).statusCode, 400);
    // A multipart content type without its boundary (found by schemathesis: it was 500).
    const noBoundary = await send('import/parse', '{"zone": "0"}', { 'content-type': 'multipart/form-data' });
    assert.equal(noBoundary.statusCode, 400, noBoundary.body);
    assert.equal(noBoundary.json().error, 'a multipart/form-data body needs its boundary parameter');
    // Neither a body nor a content type meets none of the three body schemas (found by schemathesis: it was 500).
    for (const path of ['import', 'import/parse']) {
      const none = await cp.app.inject({ method: 'POST', url: url(path), headers: { authorization: `Bearer ${key}` } });
      assert.equal(none.statusCode, 400, none.body);
      assert.equal(
        none.json().error,
        'a zone file is required: JSON {"zone": …}, a text/plain body or a multipart file',
      );
    }
    assert.equal((await names()).length, 3);
  });

  await t.test('the body limit holds for every form (413 naming it)', async () => {
    const small = await cp.withEnv({ API_IMPORT_BODY_LIMIT_BYTES: '2048' });
    const big = `${ZONE}\n; ${'x'.repeat(4096)}\n`;
    const asText = await send('import', big, { 'content-type': 'text/plain' }, small);
    assert.equal(asText.statusCode, 413);
    assert.equal(asText.json().error, 'request body too large (limit 2048 bytes)');
    const upload = await multipart({ file: { text: big, filename: 'big.zone' } });
    const asFile = await send('import', upload.payload, upload.headers, small);
    assert.equal(asFile.statusCode, 413, asFile.body);
    assert.equal(asFile.json().error, 'uploaded file too large (limit 2048 bytes)');
    const asField = await multipart({ file: big });
    const field = await send('import', asField.payload, asField.headers, small);
    assert.equal(field.statusCode, 413, field.body);
    assert.equal(field.json().error, 'form field file too large (limit 2048 bytes)');
    assert.equal((await names()).length, 3);
  });

  await t.test('other routes still take JSON only (415)', async () => {
    const res = await send('', 'www IN A 192.0.2.1', { 'content-type': 'text/plain' });
    assert.equal(res.statusCode, 415);
    const upload = await multipart({ name: 'x', type: 'A', destination: '192.0.2.1' });
    assert.equal((await send('', upload.payload, upload.headers)).statusCode, 415);
  });

  await t.test('the OpenAPI document lists the three request content types', async () => {
    const doc = (await cp.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of ['/domains/{domain}/records/import', '/domains/{domain}/records/import/parse']) {
      const content = doc.paths[path].post.requestBody.content;
      assert.deepEqual(Object.keys(content).sort(), ['application/json', 'multipart/form-data', 'text/plain']);
      assert.equal(content['text/plain'].schema.type, 'string');
      assert.deepEqual(Object.keys(content['multipart/form-data'].schema.properties), ['file']);
    }
  });
});
