// TLS handshakes per second against one server on 127.0.0.1 (bench/edge-node/tls.sh): CONCURRENCY loops, each a
// fresh tls.connect with a random SNI from names.txt, no session reuse (no ticket, no session id offered), closed as
// soon as the handshake completes; for SECONDS. First checks, trusting only the bench CA, that a sample of names gets
// its own certificate (the right leaf by SNI, not the default). Prints one JSON line.
// Usage: node --import tsx bench/edge-node/tls-handshakes.ts <PORT> <DIR> <SECONDS> <CONCURRENCY>
import { connect, type TLSSocket } from 'node:tls';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [portText, dir, secondsText, concurrencyText] = process.argv.slice(2);
const port = Number(portText);
const seconds = Number(secondsText);
const concurrency = Number(concurrencyText);
if (!port || !dir || !(seconds > 0 && seconds <= 120) || !(concurrency > 0 && concurrency <= 256))
  throw new Error('usage: tls-handshakes.ts <PORT> <DIR> <SECONDS 1..120> <CONCURRENCY 1..256>');
const names = readFileSync(join(dir, 'names.txt'), 'utf8').split('\n').filter(Boolean);
const ca = readFileSync(join(dir, 'certs', 'ca.crt'));

function handshake(servername: string, verify: boolean): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: verify });
    socket.setTimeout(10_000, () => socket.destroy(new Error('handshake timed out')));
    socket.once('secureConnect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** A sample of names served with their own leaf (verified against the bench CA only), waiting while they load. */
async function checkSample(): Promise<void> {
  const sample = [names[0]!, names[names.length - 1]!];
  for (let i = 0; i < 18; i++) sample.push(names[Math.floor(Math.random() * names.length)]!);
  const deadline = Date.now() + 120_000;
  for (const name of sample) {
    for (;;) {
      try {
        const s = await handshake(name, true);
        const cn = s.getPeerCertificate().subject?.CN;
        s.destroy();
        if (cn !== name) throw new Error(`${name}: served ${String(cn)}`);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
}

await checkSample();
let done = 0;
let errors = 0;
const end = Date.now() + seconds * 1000;
const started = process.hrtime.bigint();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      try {
        const s = await handshake(names[Math.floor(Math.random() * names.length)]!, false);
        if (s.isSessionReused()) throw new Error('a session was reused');
        s.destroy();
        done++;
      } catch {
        errors++;
      }
    }
  }),
);
const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
console.log(JSON.stringify({ handshakes: done, errors, seconds: elapsed, rate: Math.round(done / elapsed) }));
