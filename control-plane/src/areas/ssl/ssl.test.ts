import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq, sql } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { chainFor, makeCa, sign } from '../../../../test/helpers/certs.js';
import { domains } from '../../db/schema.js';
import { rowsOf } from '../../db/migrate.js';
import { setOverride } from '../../plans/subscriptions.js';
import { recordIssuance } from './service.js';
import { dnsNames, SSL_LIMITS } from './pem.js';

test('dnsNames reads DNS entries of subjectAltName, quoted ones included, and drops what is not a host name', () => {
  assert.deepEqual(dnsNames('DNS:a.example.org, DNS:*.Example.org, IP Address:192.0.2.1, DNS:a.example.org'), [
    'a.example.org',
    '*.example.org',
  ]);
  assert.deepEqual(dnsNames('DNS:"x, y.example.org", DNS:ok.example.org, email:a@b'), ['ok.example.org']);
  assert.deepEqual(dnsNames(''), []);
});

test('SSL API: parse, upload errors, list, choose, delete, GET ssl/ and the domain list summary', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'shop.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  for (const n of ['@', 'www', 'api']) {
    const r = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
      name: n,
      type: 'A',
      destination: '203.0.113.10',
      proxied: true,
    });
    assert.equal(r.statusCode, 200, r.body);
  }
  const { root, intermediate, leaf } = chainFor([name, `www.${name}`, 'other.example.net']);
  const full = `${leaf.certPem}${intermediate.certPem}${root.certPem}`;
  const upload = (body: unknown, key = owner.key) => cp.call(key, 'POST', `/domains/${name}/ssl/`, body);
  const error = async (res: Awaited<ReturnType<typeof upload>>, status: number, pattern: RegExp) => {
    assert.equal(res.statusCode, status, res.body);
    assert.match(res.json<{ error: string }>().error, pattern);
  };

  await t.test('GET ssl/ with nothing: missing, every proxied hostname uncovered, manual issue possible', async () => {
    const res = await cp.call(owner.key, 'GET', `/domains/${name}/ssl/`);
    assert.equal(res.statusCode, 200, res.body);
    const info = res.json();
    assert.equal(info.status, 'missing');
    assert.equal(info.certificate_id, null);
    assert.equal(info.can_manual_issue, true);
    assert.deepEqual(
      info.coverage.map((c: { hostname: string }) => c.hostname),
      [name, `api.${name}`, `www.${name}`],
    );
    assert.equal(info.coverage[0].state, 'waiting');
  });

  await t.test('POST ssl/parse: names, eligible, default selection; nothing stored; 400s', async () => {
    const res = await cp.call(owner.key, 'POST', `/domains/${name}/ssl/parse`, { certificate: full });
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json();
    assert.deepEqual(p.sans, [name, `www.${name}`, 'other.example.net']);
    assert.deepEqual(p.eligible, [name, `www.${name}`]);
    assert.deepEqual(p.default_selection, [name, `www.${name}`]);
    assert.match(p.issuer, /CN=Test Intermediate CA/);
    assert.ok(Date.parse(p.not_after) > Date.now());
    assert.equal(
      rowsOf(await cp.database.db.execute(sql`SELECT id FROM certificates WHERE domain_id = ${dom!.id}`)).length,
      0,
    );
    await error(await cp.call(owner.key, 'POST', `/domains/${name}/ssl/parse`, {}), 400, /certificate/);
    await error(
      await cp.call(owner.key, 'POST', `/domains/${name}/ssl/parse`, { certificate: 'hello' }),
      400,
      /not PEM/,
    );
    await error(
      await cp.call(owner.key, 'POST', `/domains/${name}/ssl/parse`, {
        certificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
      }),
      400,
      /not a valid X.509 certificate/,
    );
  });

  await t.test('upload without the plan feature: 403 naming it', async () => {
    const res = await upload({ certificate: full, private_key: leaf.keyPem, hostnames: [name] });
    await error(res, 403, /custom_ssl_enabled/);
    assert.equal(res.json().feature, 'custom_ssl_enabled');
  });

  await setOverride(cp.database.db, dom!.id, 'custom_ssl_enabled', true);

  await t.test('upload: 400 for each bad input, nothing stored', async () => {
    await error(await upload({ private_key: leaf.keyPem, hostnames: [name] }), 400, /certificate/);
    await error(await upload({ certificate: full, hostnames: [name] }), 400, /private_key/);
    await error(await upload({ certificate: full, private_key: leaf.keyPem }), 400, /hostnames/);
    await error(
      await upload({ certificate: full, private_key: leaf.keyPem, hostnames: [] }),
      400,
      /missing fields: hostnames/,
    );
    await error(await upload({ certificate: 'garbage', private_key: leaf.keyPem, hostnames: [name] }), 400, /not PEM/);
    await error(
      await upload({ certificate: full, private_key: 'garbage', hostnames: [name] }),
      400,
      /private_key is not PEM/,
    );
    const other = sign(intermediate, [name]);
    await error(
      await upload({ certificate: full, private_key: other.keyPem, hostnames: [name] }),
      400,
      /does not match the certificate/,
    );
    const expired = sign(intermediate, [name], { startDate: '20200101000000Z', endDate: '20200201000000Z' });
    await error(
      await upload({
        certificate: `${expired.certPem}${intermediate.certPem}${root.certPem}`,
        private_key: expired.keyPem,
        hostnames: [name],
      }),
      400,
      /certificate expired on 2020-02-01/,
    );
    await error(
      await upload({ certificate: full, private_key: leaf.keyPem, hostnames: [`api.${name}`] }),
      400,
      /hostname api\.shop\.example\.org is not covered by the certificate/,
    );
    await error(
      await upload({ certificate: full, private_key: leaf.keyPem, hostnames: ['other.example.net'] }),
      400,
      /not covered/,
    );
    // Chain: out of order, incomplete (no intermediate, root unknown), the key in the certificate field.
    await error(
      await upload({
        certificate: `${leaf.certPem}${root.certPem}${intermediate.certPem}`,
        private_key: leaf.keyPem,
        hostnames: [name],
      }),
      400,
      /not in order: certificate 2 did not sign certificate 1/,
    );
    await error(
      await upload({ certificate: leaf.certPem, private_key: leaf.keyPem, hostnames: [name] }),
      400,
      /chain is incomplete/,
    );
    await error(
      await upload({ certificate: `${full}${leaf.keyPem}`, private_key: leaf.keyPem, hostnames: [name] }),
      400,
      /holds a private key/,
    );
    // Keys the edge does not take.
    for (const [kind, pattern] of [
      ['rsa1024', /RSA keys of 2048 to 8192 bits/],
      ['ed25519', /RSA or ECDSA keys are accepted, got ed25519/],
      ['p521', /P-256 or P-384/],
    ] as const) {
      const c = sign(intermediate, [name], { kind });
      await error(
        await upload({
          certificate: `${c.certPem}${intermediate.certPem}${root.certPem}`,
          private_key: c.keyPem,
          hostnames: [name],
        }),
        400,
        pattern,
      );
    }
    assert.equal(
      rowsOf(await cp.database.db.execute(sql`SELECT id FROM certificates WHERE domain_id = ${dom!.id}`)).length,
      0,
    );
  });

  await t.test('abuse: every input is bounded before parsing', async () => {
    const big = 'A'.repeat(SSL_LIMITS.certificatePemBytes + 1);
    await error(await upload({ certificate: big, private_key: leaf.keyPem, hostnames: [name] }), 400, /certificate/);
    await error(
      await upload({
        certificate: full,
        private_key: 'A'.repeat(SSL_LIMITS.privateKeyPemBytes + 1),
        hostnames: [name],
      }),
      400,
      /private_key/,
    );
    await error(
      await upload({
        certificate: full,
        private_key: leaf.keyPem,
        hostnames: Array.from({ length: SSL_LIMITS.hostnames + 1 }, (_, i) => `h${i}.${name}`),
      }),
      400,
      /hostnames/,
    );
    await error(
      await upload({ certificate: full, private_key: leaf.keyPem, hostnames: ['x'.repeat(300)] }),
      400,
      /hostnames/,
    );
    // Many small blocks: refused at the ninth BEGIN line, before any is parsed.
    const blocks = '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n'.repeat(
      SSL_LIMITS.chainCertificates + 1,
    );
    await error(
      await cp.call(owner.key, 'POST', `/domains/${name}/ssl/parse`, { certificate: blocks }),
      400,
      /at most 8 PEM blocks/,
    );
    // An unterminated label and a BEGIN line without END.
    await error(
      await cp.call(owner.key, 'POST', `/domains/${name}/ssl/parse`, {
        certificate: `-----BEGIN ${'X'.repeat(20_000)}`,
      }),
      400,
      /not closed|not a PEM label/,
    );
    await error(
      await cp.call(owner.key, 'POST', `/domains/${name}/ssl/parse`, {
        certificate: '-----BEGIN CERTIFICATE-----\nAAAA',
      }),
      400,
      /has no "-----END CERTIFICATE-----" line/,
    );
  });

  let uploadedId = 0;
  await t.test('upload: stored without its key, served, listed; a second upload of it is 409', async () => {
    const res = await upload({ certificate: full, private_key: leaf.keyPem, hostnames: [name, `WWW.${name}.`] });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.certificate.source, 'uploaded');
    assert.equal(body.certificate.status, 'active');
    assert.deepEqual(body.certificate.hostnames, [name, `www.${name}`]);
    assert.deepEqual(body.certificate.served_hostnames, [name, `www.${name}`]);
    assert.equal(body.certificate.key_type, 'ecdsa');
    assert.equal(body.certificate.key_size, 256);
    assert.ok(!res.body.includes('PRIVATE KEY'));
    uploadedId = body.certificate.id;
    await error(
      await upload({ certificate: full, private_key: leaf.keyPem, hostnames: [name] }),
      409,
      /already on the domain/,
    );

    const info = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/`)).json();
    assert.equal(info.status, 'active');
    assert.equal(info.certificate_id, uploadedId);
    assert.equal(info.key_size, 256);
    assert.deepEqual(info.sans, [name, `www.${name}`, 'other.example.net']);
    assert.equal(info.can_manual_issue, false);
    assert.deepEqual(
      info.coverage.map((c: { hostname: string }) => c.hostname),
      [`api.${name}`],
    );
    const list = await cp.call(owner.key, 'GET', '/domains/');
    const item = list.json().find((d: { name: string }) => d.name === name);
    assert.deepEqual(item.ssl, { status: 'active', expires_at: info.not_after });
    const certs = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/certificates/`)).json().certificates;
    assert.equal(certs.length, 1);
    assert.ok(!JSON.stringify(certs).includes('PRIVATE KEY'));
  });

  await t.test('RSA leaf with a wildcard; choose decides which serves a shared name; delete', async () => {
    const wild = sign(intermediate, [`*.${name}`], { kind: 'rsa' });
    const res = await upload({
      certificate: `${wild.certPem}${intermediate.certPem}${root.certPem}`,
      private_key: wild.keyPem,
      hostnames: [`*.${name}`],
    });
    assert.equal(res.statusCode, 200, res.body);
    const wildId = res.json().certificate.id;
    assert.equal(res.json().certificate.key_type, 'rsa');
    assert.equal(res.json().certificate.key_size, 2048);
    // Newest uploaded first: the wildcard serves *.name; www stays listed exactly on the first one (exact wins).
    let info = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/`)).json();
    assert.deepEqual(info.coverage, []);
    const listed = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/certificates/`)).json().certificates;
    assert.deepEqual(
      listed.map((c: { served_hostnames: string[] }) => c.served_hostnames),
      [[name, `www.${name}`], [`*.${name}`]],
    );
    const chosen = await cp.call(owner.key, 'POST', `/domains/${name}/ssl/certificates/${uploadedId}/choose`);
    assert.equal(chosen.statusCode, 200, chosen.body);
    assert.equal(chosen.json().chosen, true);
    const wildNow = await cp.call(owner.key, 'POST', `/domains/${name}/ssl/certificates/${wildId}/choose`);
    assert.deepEqual(wildNow.json().served_hostnames, [`*.${name}`, `www.${name}`]);
    info = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/`)).json();
    assert.equal(info.certificate_id, wildId);
    // Withdrawn, then chosen again: www goes back to the exact certificate and returns to the wildcard.
    const unchoose = (id: number) => cp.call(owner.key, 'DELETE', `/domains/${name}/ssl/certificates/${id}/choose`);
    await error(await unchoose(uploadedId), 404, /is not the chosen certificate/);
    assert.equal((await unchoose(wildId)).statusCode, 200);
    const after = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/certificates/`)).json().certificates;
    assert.deepEqual(
      after.map((c: { chosen: boolean; served_hostnames: string[] }) => [c.chosen, c.served_hostnames]),
      [
        [false, [name, `www.${name}`]],
        [false, [`*.${name}`]],
      ],
    );
    await cp.call(owner.key, 'POST', `/domains/${name}/ssl/certificates/${wildId}/choose`);
    assert.equal((await cp.call(owner.key, 'POST', `/domains/${name}/ssl/certificates/999999/choose`)).statusCode, 404);
    assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${name}/ssl/certificates/${wildId}`)).statusCode, 200);
    info = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/`)).json();
    assert.equal(info.certificate_id, uploadedId);
    assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${name}/ssl/certificates/${wildId}`)).statusCode, 404);
  });

  await t.test('issuance state shows in GET ssl/ coverage; issued certificates cannot be deleted', async () => {
    await recordIssuance(cp.database.db, dom!.id, {
      hostnames: { [`api.${name}`]: { attempts: 2, last_error: 'timeout', next_retry_at: '2030-01-01T00:00:00.000Z' } },
    });
    const info = (await cp.call(owner.key, 'GET', `/domains/${name}/ssl/`)).json();
    assert.deepEqual(info.coverage, [
      {
        hostname: `api.${name}`,
        state: 'retrying',
        attempts: 2,
        last_error: 'timeout',
        next_retry_at: '2030-01-01T00:00:00.000Z',
      },
    ]);
    const { storeIssuedCertificate } = await import('./service.js');
    const ca = makeCa('Issuer Root');
    const issued = sign(ca, [`api.${name}`]);
    const row = await storeIssuedCertificate(cp.app, name, { certPem: issued.certPem, keyPem: issued.keyPem });
    await error(
      await cp.call(owner.key, 'DELETE', `/domains/${name}/ssl/certificates/${row.id}`),
      400,
      /only uploaded certificates can be deleted/,
    );
    assert.deepEqual((await cp.call(owner.key, 'GET', `/domains/${name}/ssl/`)).json().coverage, []);
  });

  await t.test('a disabled domain: upload and choose are 409', async () => {
    await cp.database.db.update(domains).set({ state: 'disabled' }).where(eq(domains.id, dom!.id));
    const again = sign(intermediate, [name]);
    await error(
      await upload({
        certificate: `${again.certPem}${intermediate.certPem}${root.certPem}`,
        private_key: again.keyPem,
        hostnames: [name],
      }),
      409,
      /domain is disabled/,
    );
    await error(
      await cp.call(owner.key, 'POST', `/domains/${name}/ssl/certificates/${uploadedId}/choose`),
      409,
      /domain is disabled/,
    );
    await cp.database.db.update(domains).set({ state: 'active' }).where(eq(domains.id, dom!.id));
  });

  await t.test(
    'roles and keys: viewer reads but cannot parse; editor parses but cannot upload; read-only 403',
    async () => {
      const viewer = await cp.user();
      await cp.addMember(name, viewer.id, 'viewer');
      assert.equal((await cp.call(viewer.key, 'GET', `/domains/${name}/ssl/`)).statusCode, 200);
      assert.equal((await cp.call(viewer.key, 'GET', `/domains/${name}/ssl/certificates/`)).statusCode, 200);
      await error(
        await cp.call(viewer.key, 'POST', `/domains/${name}/ssl/parse`, { certificate: full }),
        403,
        /no write access/,
      );
      const editor = await cp.user();
      await cp.addMember(name, editor.id, 'editor');
      assert.equal(
        (await cp.call(editor.key, 'POST', `/domains/${name}/ssl/parse`, { certificate: full })).statusCode,
        200,
      );
      await error(
        await upload({ certificate: full, private_key: leaf.keyPem, hostnames: [name] }, editor.key),
        403,
        /lacks the ssl.manage permission/,
      );
      await error(
        await cp.call(editor.key, 'DELETE', `/domains/${name}/ssl/certificates/${uploadedId}`),
        403,
        /ssl.manage/,
      );
      const ro = await cp.key(owner.id, { readOnly: true });
      await error(
        await cp.call(ro.key, 'POST', `/domains/${name}/ssl/parse`, { certificate: full }),
        403,
        /read-only API key/,
      );
      const stranger = await cp.user();
      assert.equal((await cp.call(stranger.key, 'GET', `/domains/${name}/ssl/`)).statusCode, 404);
    },
  );
});
