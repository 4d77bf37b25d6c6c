// Pebble as the project provisions it (scripts/setup.mjs, `go install`) and the tests start it: its directory answers
// over TLS with the endpoint certificate we made, its management endpoint gives its root, and it stops and starts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, fetch } from 'undici';
import { startPebble, type Pebble } from './acme-harness.js';

let pebble: Pebble;
before(async () => {
  pebble = await startPebble({ dnsServer: '127.0.0.1:9' });
});
after(async () => {
  await pebble?.close();
});

test('Pebble serves its ACME directory and its root; stopped, it is unreachable; started again, a new root', async () => {
  const dispatcher = new Agent({ connect: { ca: readFileSync(pebble.tlsCaFile, 'utf8') } });
  try {
    const dir = (await (await fetch(pebble.directoryUrl, { dispatcher })).json()) as Record<string, unknown>;
    assert.equal(typeof dir.newOrder, 'string');
    assert.equal(typeof dir.newAccount, 'string');
    const root = new X509Certificate(await pebble.root());
    assert.equal(root.ca, true);
    assert.match(root.subject, /Pebble Root CA/);

    await pebble.stop();
    await assert.rejects(fetch(pebble.directoryUrl, { dispatcher }));
    await pebble.start();
    const again = new X509Certificate(await pebble.root());
    assert.notEqual(again.fingerprint256, root.fingerprint256);
  } finally {
    await dispatcher.close();
  }
});
