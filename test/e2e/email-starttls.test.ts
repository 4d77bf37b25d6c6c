// STARTTLS at the mail node (issue 18): the certificate the platform holds for the recipient domain is presented by
// SNI, any other name (or none) gets the node's default certificate. Checked with node's tls client (the presented
// leaf's fingerprint) and with nodemailer trusting only the domain's CA (a verified STARTTLS session, mail delivered).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import nodemailer from 'nodemailer';
import { chainFor } from '../helpers/certs.js';
import { startEmailHarness } from './email-harness.js';

/** EHLO, STARTTLS, then a TLS handshake naming `servername` (none: no SNI); the fingerprint of the leaf presented. */
async function presented(port: number, servername: string | undefined): Promise<string> {
  const socket = netConnect(port, '127.0.0.1');
  let buffer = '';
  const waitFor = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (re.test(buffer)) {
          socket.off('data', onData);
          buffer = '';
          resolve();
        }
      };
      const onData = (d: Buffer) => {
        buffer += d.toString();
        check();
      };
      socket.on('data', onData);
      socket.once('error', reject);
      check();
    });
  try {
    await waitFor(/^220 .*\r\n/m);
    socket.write('EHLO client.test\r\n');
    await waitFor(/^250 .*\r\n/m);
    socket.write('STARTTLS\r\n');
    await waitFor(/^220 .*\r\n/m);
    const secure = tlsConnect({ socket, rejectUnauthorized: false, ...(servername ? { servername } : {}) });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    });
    const fp = secure.getPeerCertificate().fingerprint256;
    secure.end('QUIT\r\n');
    return fp;
  } finally {
    socket.destroy();
  }
}

test(
  'STARTTLS presents the recipient domain’s certificate by SNI, the default certificate otherwise',
  { timeout: 240_000 },
  async (t) => {
    const h = await startEmailHarness(t);
    const { key } = await h.routedDomain('tls-mail.test', 'tina@dest.test');
    await h.cp.database.db
      .execute(sql`UPDATE subscriptions SET overrides = overrides || '{"custom_ssl_enabled": true}'::jsonb
      WHERE domain_id = (SELECT id FROM domains WHERE name = 'tls-mail.test')`);
    const chain = chainFor(['tls-mail.test', '*.tls-mail.test']);
    const up = await h.cp.call(key, 'POST', '/domains/tls-mail.test/ssl/', {
      certificate: `${chain.leaf.certPem}${chain.intermediate.certPem}${chain.root.certPem}`,
      private_key: chain.leaf.keyPem,
      hostnames: ['tls-mail.test', '*.tls-mail.test'],
    });
    assert.equal(up.statusCode, 200, up.body);
    const fp = (pem: string) => new X509Certificate(pem).fingerprint256;
    const domainFp = fp(chain.leaf.certPem);
    const defaultFp = fp(readFileSync(join(h.mailDataDir, 'mail-tls', 'default', 'default.crt'), 'utf8'));
    assert.notEqual(domainFp, defaultFp);

    assert.equal(await presented(h.mailPort, 'tls-mail.test'), domainFp);
    assert.equal(await presented(h.mailPort, 'MX.TLS-MAIL.TEST'), domainFp, 'the wildcard, any case');
    assert.equal(await presented(h.mailPort, 'unrouted.test'), defaultFp, 'no certificate for the name');
    assert.equal(await presented(h.mailPort, undefined), defaultFp, 'no SNI');
    // Abuse: a name no host has (too long, odd characters) never reaches the control plane; the default answers.
    assert.equal(await presented(h.mailPort, `${'a'.repeat(63)}.`.repeat(5) + 'test'), defaultFp);
    assert.equal(await presented(h.mailPort, 'bad_name!.test'), defaultFp);

    // A real client that trusts only the domain's CA: STARTTLS verifies, and the message goes through; naming another
    // host it gets the default certificate and refuses it.
    const sendVerified = async (servername: string, text: string) => {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: h.mailPort,
        secure: false,
        requireTLS: true,
        tls: { servername, ca: [chain.root.certPem], rejectUnauthorized: true },
      });
      try {
        return await transport.sendMail({ from: 'x@sender.test', to: 'info@tls-mail.test', subject: 'tls', text });
      } finally {
        transport.close();
      }
    };
    assert.match(String((await sendVerified('tls-mail.test', 'tls body')).response), /^250/);
    await h.sink.next('tina@dest.test', (m) => m.raw.includes('tls body'));
    await assert.rejects(sendVerified('unrouted.test', 'refused'), /certificate|self.signed|verify/i);
  },
);
