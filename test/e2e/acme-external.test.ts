// ACME issuance for external-DNS domains end to end: the ACME delegation zone is served by our own DNS node (the
// canary of every external domain, the dns-01 TXTs while an order runs), Pebble asks a stub "internet" resolver that
// follows the user's `_acme-challenge` CNAME into that zone, and the edge serves the issued certificate over HTTPS,
// verified against Pebble's root. Wildcard proxied records (`*`) of external and managed domains are covered too.
// Without the CNAME, proxied names other than wildcards are validated by http-01 at the running edge instead.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import DNS from 'dns2';
import { startAcmeStack, type AcmeStack } from './acme-harness.js';
import { eventually } from '../helpers/workflows-harness.js';
import type { StubDns } from '../helpers/stub-dns.js';

let S: AcmeStack;
before(async () => {
  S = await startAcmeStack('acme-external', {}, { internet: true });
});
after(async () => {
  if (process.env.ACME_DEBUG) console.log(S?.outputs());
  await S?.close();
});

/** The user's DNS host, as every public resolver sees it. */
const internet = (fn: (s: StubDns) => void) => [S.L.dns, S.L.dns2].forEach(fn);

/** TXT values our own DNS node serves at `name`. */
async function servedTxt(name: string): Promise<string[]> {
  const res = await DNS.UDPClient({ dns: '127.0.0.1', port: S.dnsPort, timeout: 2000 })(name, 'TXT');
  return res.answers
    .filter((a) => a.type === DNS.Packet.TYPE.TXT)
    .map((a) => {
      const data = (a as unknown as { data: string | string[] }).data;
      return Array.isArray(data) ? data.join('') : data;
    })
    .sort();
}

interface Delegation {
  name: string;
  target: string;
  canary: string;
}

/** Creates an external domain; its ssl_delegation block with the canary (read through /internal). */
async function externalDomain(name: string): Promise<Delegation> {
  const created = await S.L.api('POST', '/domains/', { name, dns_mode: 'external' });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const internal = await S.L.internal('GET', `/internal/domains/${name}`);
  return internal.body.ssl_delegation as Delegation;
}

test('external DNS: the canary is served, the delegation check passes through the CNAME, and a proxied record ends with a Pebble certificate at the edge', async () => {
  const d = 'ext-shop.example.net';
  const block = await externalDomain(d);
  assert.equal(block.name, `_acme-challenge.${d}`);
  assert.match(block.target, /^[0-9a-f]{32}\.acme\.platform\.test$/);
  // The delegation zone is served data: our DNS node answers the canary at the CNAME target.
  await eventually('the DNS node to serve the canary', async () =>
    (await servedTxt(block.target)).includes(block.canary) ? true : undefined,
  );

  // The user adds the CNAME at their DNS host; the check finds the canary through it (the resolvers follow the
  // CNAME into the delegation zone and ask our node) and the domain becomes active.
  internet((s) => s.set(block.name, 'CNAME', [block.target]));
  const check = await S.L.api('POST', `/domains/${d}/ssl/delegation/check`);
  assert.equal(check.status, 200, JSON.stringify(check.body));
  assert.equal(check.body.ok, true);
  assert.equal((await S.L.api('GET', `/domains/${d}`)).body.state, 'active');

  await S.proxied(d, 'www');
  const cert = await S.served(`www.${d}`);
  assert.match(String(cert.issuer.CN), /Pebble Intermediate/);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
  assert.equal((await S.handshake(d)).fingerprint256, cert.fingerprint256);
  // The challenge TXTs were withdrawn from the delegation zone; the canary stays.
  await eventually('the challenge TXTs to be withdrawn', async () => {
    const values = await servedTxt(block.target);
    return values.length === 1 && values[0] === block.canary ? true : undefined;
  });
  const ssl = (await S.L.api('GET', `/domains/${d}/ssl/`)).body;
  assert.equal(ssl.status, 'active', JSON.stringify(ssl));
});

test('external DNS, wildcard proxied record: any name under it is served a Pebble certificate', async () => {
  const d = 'ext-wild.example.net';
  const block = await externalDomain(d);
  internet((s) => s.set(block.name, 'CNAME', [block.target]));
  await eventually('the canary through the CNAME', async () =>
    (await servedTxt(block.target)).includes(block.canary) ? true : undefined,
  );
  const check = await S.L.api('POST', `/domains/${d}/ssl/delegation/check`);
  assert.equal(check.status, 200, JSON.stringify(check.body));
  await S.proxied(d, '*');
  const cert = await S.served(`anything.${d}`);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
  assert.equal((await S.handshake(`other.${d}`)).fingerprint256, cert.fingerprint256);
});

test('managed DNS, wildcard proxied record: any name under it is served a Pebble certificate', async () => {
  const d = 'wild.example.org';
  // The parent delegates the zone to our nameservers: resolvers ask our DNS node for its names.
  internet((s) => s.forward(d, `127.0.0.1:${S.dnsPort}`));
  await S.activeDomain(d);
  await S.proxied(d, '*');
  const cert = await S.served(`deep-name.${d}`);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
});

test('external DNS without the CNAME, a wildcard record only: no order is made, the attempt records why', async () => {
  const d = 'ext-nocname.example.net';
  const block = await externalDomain(d);
  // Verified through the legacy TXT token, the CNAME never added.
  const created = (await S.L.internal('GET', `/internal/domains/${d}`)).body;
  internet((s) => s.set(created.verification.name, 'TXT', [created.verification.value]));
  const verify = await S.L.api('POST', `/domains/${d}/verify`);
  assert.equal(verify.status, 200, JSON.stringify(verify.body));
  // A wildcard needs dns-01 (http-01 cannot prove it): the order waits for the CNAME.
  await S.proxied(d, '*');
  const failed = await eventually('the attempt to fail', async () => {
    const ssl = (await S.L.api('GET', `/domains/${d}/ssl/`)).body;
    return ssl.status === 'failed' ? ssl : undefined;
  });
  const why = JSON.stringify(failed);
  assert.match(why, /ssl_delegation CNAME is not in place/);
  assert.match(why, new RegExp(`add a CNAME to ${block.target.replace(/\./g, '\\.')}`));
  assert.ok(!(await S.history(d)).includes('acmeNewOrder'));
});

/** GET over HTTPS through the edge, trusting only Pebble's root. */
function httpsGet(host: string, path: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: S.edge.httpsPort, path, servername: host, headers: { host }, ca, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

test('external DNS without the CNAME: a proxied hostname gets its certificate through http-01 at the running edge', async (t) => {
  // Pebble resolves the name through the user's DNS (→ 127.0.0.1) and fetches the key authorization from the edge's
  // HTTP port (its httpPort); the edge then serves the certificate over HTTPS and proxies to the origin.
  const origin = createServer((req, res) => res.end(`origin saw ${req.headers.host} ${req.url}`));
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => origin.close(() => r())));
  const d = 'http01-shop.example.net';
  const host = `www.${d}`;
  await externalDomain(d);
  const created = (await S.L.internal('GET', `/internal/domains/${d}`)).body;
  internet((s) => s.set(created.verification.name, 'TXT', [created.verification.value]));
  const verify = await S.L.api('POST', `/domains/${d}/verify`);
  assert.equal(verify.status, 200, JSON.stringify(verify.body));
  assert.equal(verify.body.method, 'txt');
  internet((s) => s.set(host, 'A', ['127.0.0.1']));
  const rec = await S.L.api('POST', `/domains/${d}/records/`, {
    name: 'www',
    type: 'A',
    destination: '127.0.0.1',
    proxied: true,
    scheme: 'Http',
    port: (origin.address() as AddressInfo).port,
  });
  assert.equal(rec.status, 200, JSON.stringify(rec.body));

  const cert = await S.served(host).catch(async (err) => {
    console.log((await S.history(d).catch((e) => [String(e)])).join('\n'));
    throw err;
  });
  assert.match(String(cert.issuer.CN), /Pebble Intermediate/);
  // http-01: the name itself, no apex or wildcard (those need DNS).
  assert.equal(cert.subjectaltname, `DNS:${host}`);
  const res = await httpsGet(host, '/shop?x=1', await S.pebble.root());
  assert.equal(res.status, 200);
  assert.equal(res.body, `origin saw ${host} /shop?x=1`);

  // The order went through the http-01 steps and withdrew the key authorization after; no CNAME check, no TXT. The
  // withdrawal follows the certificate's storage, so it may still be running when the certificate is first served.
  const history = async () => (await S.history(d)).filter((s) => !s.startsWith(' '));
  const steps = await eventually(`${d}'s order to withdraw its key authorization`, async () => {
    const s = await history();
    return s.includes('withdrawAcmeHttpChallenges') ? s : undefined;
  }).catch(history);
  for (const step of ['publishAcmeHttpChallenges', 'acmeHttpChallengesServed', 'withdrawAcmeHttpChallenges'])
    assert.ok(steps.includes(step), `${step} in ${steps.join(', ')}`);
  assert.ok(!steps.includes('publishAcmeChallenges') && !steps.includes('checkAcmeDelegation'));
  const ssl = await eventually(`${d}'s SSL to be active`, async () => {
    const s = (await S.L.api('GET', `/domains/${d}/ssl/`)).body;
    return s.status === 'active' ? s : undefined;
  });
  assert.deepEqual(ssl.sans, [host]);
});

/**
 * acme-dns as its /update is documented (X-Api-User, X-Api-Key, JSON {subdomain, txt}; 200 {txt}; 401 otherwise),
 * serving what it is given as acme-dns does: the two newest values at `<subdomain>.<authZone>` ("the internet").
 */
async function startAcmeDns(creds: { user: string; key: string; subdomain: string }, authZone: string) {
  const values: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: { subdomain?: string; txt?: string } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        // refused below
      }
      res.setHeader('content-type', 'application/json');
      const ok =
        req.method === 'POST' &&
        req.url === '/update' &&
        req.headers['x-api-user'] === creds.user &&
        req.headers['x-api-key'] === creds.key &&
        body.subdomain === creds.subdomain;
      if (!ok) return void res.writeHead(401).end('{"error": "forbidden"}');
      if (typeof body.txt !== 'string' || body.txt.length !== 43)
        return void res.writeHead(400).end('{"error": "bad_txt"}');
      values.push(body.txt);
      internet((s) => s.set(`${creds.subdomain}.${authZone}`, 'TXT', values.slice(-2), 1));
      res.writeHead(200).end(JSON.stringify({ txt: body.txt }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    values,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

test('external DNS with an acme-dns account: the TXTs go through its /update and a Pebble certificate is served', async (t) => {
  const d = 'ext-acmedns.example.net';
  const creds = {
    user: 'c36f50e8-4632-44f0-83fe-e070fef28a10',
    key: 'htB9mR9DYgcu9bX_afHF62erXaH2TS7bg9KW3F7Z',
    subdomain: '8e5700ea-a4bf-41c7-8a77-e990661dcc6a',
  };
  const authZone = 'auth.acme-dns.example.com';
  const acmeDns = await startAcmeDns(creds, authZone);
  t.after(() => acmeDns.close());
  const block = await externalDomain(d);
  const created = (await S.L.internal('GET', `/internal/domains/${d}`)).body;
  internet((s) => s.set(created.verification.name, 'TXT', [created.verification.value]));
  assert.equal((await S.L.api('POST', `/domains/${d}/verify`)).status, 200);
  const put = await S.L.api('PUT', `/domains/${d}/ssl/acme-dns`, {
    server_url: acmeDns.url,
    username: creds.user,
    password: creds.key,
    subdomain: creds.subdomain,
    fulldomain: `${creds.subdomain}.${authZone}`,
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));

  await S.proxied(d, 'www');
  // Without the CNAME to the account no order is made: the attempt says why.
  const failed = await eventually('the attempt to fail', async () => {
    const ssl = (await S.L.api('GET', `/domains/${d}/ssl/`)).body;
    return ssl.status === 'failed' ? ssl : undefined;
  });
  assert.match(JSON.stringify(failed), /the _acme-challenge CNAME does not lead to the acme-dns account/);
  assert.equal(acmeDns.values.length, 0);
  // The user's _acme-challenge CNAME points at their acme-dns account (not into our delegation zone): the retry
  // goes through.
  internet((s) => s.set(block.name, 'CNAME', [`${creds.subdomain}.${authZone}`]));
  const cert = await S.served(`www.${d}`);
  assert.match(String(cert.issuer.CN), /Pebble Intermediate/);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
  // Two values (apex and wildcard) went through /update; nothing was published in our delegation zone.
  assert.equal(acmeDns.values.length, 2);
  assert.deepEqual(await servedTxt(block.target), [block.canary]);
});
