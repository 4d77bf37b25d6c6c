// Zone transfers to a real secondary: Debian's NSD, started on 127.0.0.1 with its own configuration, transfers a
// signed zone from our server with TSIG (hmac-sha256), serves it so that delv validates its answers, and picks a
// change up after our NOTIFY. Transfers without the key, with a wrong key or from an address that is not a
// secondary are refused; dig checks the TSIG of every message of a signed AXFR, and dnssec-verify the zone it got.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DomainSnapshot } from '@platform/shared/config';
import { createCounters } from '../counters.js';
import { startDnsServer } from '../server.js';
import { rec, sampleSnapshot } from '../testing/fixtures.js';
import { ZoneBuilder } from '../zone/builder.js';
import { ZoneTable } from '../zone/table.js';
import { makeDnssec, trustAnchor } from '../dnssec/testing.js';
import { Notifier } from './notify.js';
import { freeDnsPort, need, startNsd } from './testing.js';

const run = promisify(execFile);
const OPTS = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] };

async function out(file: string, args: string[]): Promise<string> {
  try {
    const r = await run(file, args, { encoding: 'utf8', timeout: 30_000, maxBuffer: 1 << 26 });
    return r.stdout + r.stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}

async function until(what: string, get: () => Promise<string>, expect: RegExp): Promise<string> {
  const end = Date.now() + 30_000;
  for (;;) {
    const text = await get();
    if (expect.test(text)) return text;
    if (Date.now() > end) assert.fail(`${what}: no match for ${expect}:\n${text}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('NSD as a secondary: signed AXFR with TSIG, NOTIFY on change, refusals', async (t) => {
  need('nsd', 'dig', 'delv', 'dnssec-verify');
  const dir = mkdtempSync(join(tmpdir(), 'xfr-nsd-'));
  const secret = randomBytes(32);
  const nsdPort = await freeDnsPort();
  const dnssec = makeDnssec();
  const transfers = {
    secondaries: [{ address: '127.0.0.1', port: nsdPort, tsigKey: 'xfr-key' }],
    tsigKeys: [{ name: 'xfr-key', algorithm: 'hmac-sha256', secret, secretSealed: new Uint8Array(0) }],
  };
  const snapshot: DomainSnapshot = sampleSnapshot({ dnssec, transfers });
  const builder = new ZoneBuilder(snapshot, OPTS);
  const table = new ZoneTable();
  table.set(builder.zone!);
  const server = await startDnsServer({
    host: '127.0.0.1',
    port: 0,
    tcpIdleMs: 5000,
    table,
    counters: createCounters(),
  });
  const notifier = new Notifier();
  let stopNsd = async () => {};
  t.after(async () => {
    notifier.close();
    await stopNsd();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const key = `hmac-sha256:xfr-key:${secret.toString('base64')}`;
  const dig = (port: number, ...args: string[]) => out('dig', ['@127.0.0.1', '-p', String(port), '+norec', ...args]);

  await t.test('refusals: no key, a wrong key, over UDP', async () => {
    assert.match(await dig(server.port, 'example.org', 'AXFR'), /Transfer failed|NOTAUTH|REFUSED/);
    const wrong = `hmac-sha256:xfr-key:${randomBytes(32).toString('base64')}`;
    assert.match(await dig(server.port, '-y', wrong, 'example.org', 'AXFR'), /Transfer failed|NOTAUTH|BADSIG|REFUSED/);
    assert.match(
      await dig(server.port, '-y', key, '+notcp', 'example.org', 'IXFR=1'),
      /status: REFUSED|Transfer failed|Couldn't verify signature/,
    );
  });

  await t.test('a signed AXFR: every message verified by dig, the zone by dnssec-verify', async () => {
    const axfr = await dig(server.port, '-y', key, 'example.org', 'AXFR');
    assert.doesNotMatch(axfr, /Transfer failed|tsig verify failure|BADSIG/i);
    assert.match(axfr, /XFR size: \d+ records/);
    // The SOA opens and closes the transfer, nowhere else; every name of the zone is in it.
    assert.equal(axfr.split('\n').filter((l) => /\sIN\s+SOA\s/.test(l)).length, 2);
    for (const n of ['www', 'x.y.deep', '*.dev', 'sub', 'ns1.sub'])
      assert.match(axfr, new RegExp(`^${n.replace('*', '\\*')}\\.example\\.org\\.`, 'm'));
    assert.match(axfr, /\sIN\s+NSEC3\s/);
    const file = join(dir, 'axfr.zone');
    // The TSIG records dig prints (class ANY) are not zone data.
    writeFileSync(
      file,
      axfr
        .split('\n')
        .filter((l) => !/\sANY\s+TSIG\s/.test(l))
        .join('\n'),
    );
    const verified = await out('dnssec-verify', ['-o', 'example.org', file]);
    assert.match(verified, /Zone fully signed/, verified);
    // IXFR from the current serial: the SOA alone; from an older one: the whole zone.
    const ixfr = await dig(server.port, '-y', key, 'example.org', `IXFR=${builder.zone!.serial}`);
    assert.match(ixfr, /XFR size: 1 records/);
  });

  await t.test('NSD transfers the zone, serves it signed, and follows a change after NOTIFY', async () => {
    const nsd = await startNsd({
      dir,
      port: nsdPort,
      zone: 'example.org',
      primaryPort: server.port,
      key: { name: 'xfr-key', secret },
    });
    stopNsd = nsd.stop;
    await until(
      'NSD serves www',
      () => dig(nsdPort, 'www.example.org', 'A'),
      /www\.example\.org\.\s+300\s+IN\s+A\s+192\.0\.2\.10/,
    ).catch((err) => assert.fail(`${(err as Error).message}\nnsd: ${nsd.log()}`));
    writeFileSync(join(dir, 'anchor'), trustAnchor('example.org', dnssec.keys[0]));
    const delv = (name: string, type: string) =>
      out('delv', ['@127.0.0.1', '-p', String(nsdPort), '-a', join(dir, 'anchor'), '+root=example.org', name, type]);
    assert.match(await delv('www.example.org', 'A'), /^; fully validated/m);
    assert.match(await delv('nothere.example.org', 'A'), /^; negative response, fully validated/m);

    // Changes: new serials, NOTIFY, and NSD asks again with IXFR; the node answers with the differences it kept
    // (names added and removed, their NSEC3 records and signatures, the SOA) and NSD's copy stays a valid signed zone.
    const mailAaaa = snapshot.zone.records.find((r) => r.name === 'mail' && r.type === 'AAAA')!;
    builder.apply(
      { ...snapshot, zone: { ...snapshot.zone, serial: 8, records: [] } },
      [rec('added', 'A', '192.0.2.123'), rec('x.y.new', 'TXT', 'deep')],
      [mailAaaa.id],
    );
    const diff = await dig(server.port, '-y', key, 'example.org', 'IXFR=7');
    assert.match(diff, /added\.example\.org\.\s+\d+\s+IN\s+A\s+192\.0\.2\.123/);
    assert.match(
      diff,
      /mail\.example\.org\.\s+\d+\s+IN\s+AAAA\s+2001:db8::25/,
      'the removed record, in the deleted part',
    );
    const size = Number(/XFR size: (\d+) records/.exec(diff)?.[1]);
    assert.ok(size > 4 && size < 60, `an IXFR of the differences, not the zone: ${size} records`);
    notifier.notify(builder.zone!);
    await until(
      'NSD serves the change',
      () => dig(nsdPort, 'added.example.org', 'A'),
      /added\.example\.org\.\s+\d+\s+IN\s+A\s+192\.0\.2\.123/,
    );
    assert.match(await dig(nsdPort, 'mail.example.org', 'AAAA'), /ANSWER: 0,/);
    builder.apply(
      { ...snapshot, zone: { ...snapshot.zone, serial: 9, records: [] } },
      [rec('later', 'A', '192.0.2.9')],
      [],
    );
    notifier.notify(builder.zone!);
    await until('NSD serves serial 9', () => dig(nsdPort, 'later.example.org', 'A'), /192\.0\.2\.9/);
    // NSD applied the two changes as increments: each far smaller than the first, whole transfer.
    const sizes = [...nsd.log().matchAll(/received update to serial \d+ .* of (\d+) bytes/g)].map((m) => Number(m[1]));
    assert.equal(sizes.length, 3, nsd.log());
    assert.ok(sizes[1] < sizes[0] / 2 && sizes[2] < sizes[0] / 2, `transfer sizes ${sizes.join(', ')}`);
    const copy = await dig(nsdPort, 'example.org', 'AXFR');
    writeFileSync(join(dir, 'nsd-copy.zone'), copy);
    const verified = await out('dnssec-verify', ['-o', 'example.org', join(dir, 'nsd-copy.zone')]);
    assert.match(verified, /Zone fully signed/, verified);
    assert.match(await delv('added.example.org', 'A'), /^; fully validated/m);
  });
});
