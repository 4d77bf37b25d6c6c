// The UDP listener over the batch-udp native module (dns-server/native/batch-udp): the module drains the socket
// with recvmmsg and calls `onBatch` once per batch; each query is answered by the same answerQuery as over
// node:dgram, the answers are packed into one buffer and go out with one sendmmsg. DNS_UDP_IO=dgram keeps node:dgram.
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { fileURLToPath } from 'node:url';
import { answerQuery, servfail } from './handler.js';
import type { Counters } from './counters.js';
import type { ResponseRateLimiter } from './rrl.js';
import type { ZoneTable } from './zone/table.js';

interface Binding {
  open(
    options: {
      host: string;
      port: number;
      reusePort: boolean;
      recvBufferSize: number;
      batch: number;
      stride: number;
      addresses: boolean;
      rx: Buffer;
      meta: Int32Array;
      addr: Buffer;
      tx: Buffer;
    },
    onBatch: (count: number) => void,
  ): { handle: object; port: number };
  close(handle: object): void;
  META_FIELDS: number;
  ADDR_TEXT: number;
}

const MODULE_DIR = fileURLToPath(new URL('../native/batch-udp/', import.meta.url));
const ADDON = `${MODULE_DIR}build/Release/batch_udp.node`;

let binding: Binding | undefined;

/** The native module, loaded once; a clear error when it has not been built. */
export function loadBatchUdp(): Binding {
  if (binding) return binding;
  if (process.platform !== 'linux')
    throw new Error('DNS_UDP_IO=batch needs Linux (recvmmsg/sendmmsg): set DNS_UDP_IO=dgram on this system');
  try {
    binding = createRequire(import.meta.url)(ADDON) as Binding;
  } catch (err) {
    throw new Error(
      `the batched UDP module is not built (${ADDON}): run \`npm run setup\`, which builds it with node-gyp ` +
        `(needs a C compiler, make and python3), or set DNS_UDP_IO=dgram to answer through node:dgram ` +
        `(${(err as Error).message.split('\n')[0]})`,
    );
  }
  return binding;
}

/** Datagrams read per batch (and answers sent per sendmmsg). */
const BATCH = 64;
/** Receive slot size: any UDP datagram fits (65,507 bytes), and the slots do not all share one cache set. */
const STRIDE = 65_536 + 64;
/** Answers of one batch, packed: each fits in 65,535 bytes, so the batch always does. */
const TX_SIZE = BATCH * 65_536;

export interface BatchUdpOptions {
  host: string;
  port: number;
  /** SO_REUSEPORT: node:cluster workers each bind their own socket on the shared port. */
  reusePort: boolean;
  recvBufferSize: number;
  table: ZoneTable;
  counters: Counters;
  rrl: ResponseRateLimiter | null;
}

export interface UdpListener {
  port: number;
  close(): void;
}

export async function bindBatchUdp(o: BatchUdpOptions): Promise<UdpListener> {
  const b = loadBatchUdp();
  const { table, counters, rrl } = o;
  const F = b.META_FIELDS;
  const ADDR = b.ADDR_TEXT;
  const rx = Buffer.allocUnsafeSlow(BATCH * STRIDE);
  const meta = new Int32Array(BATCH * F);
  const addr = Buffer.allocUnsafeSlow(BATCH * ADDR);
  const tx = Buffer.allocUnsafeSlow(TX_SIZE);
  // One view per slot, made once: answerQuery reads msg[0, len).
  const slots = Array.from({ length: BATCH }, (_, i) => rx.subarray(i * STRIDE, (i + 1) * STRIDE));
  // Rate limiting keys on the peer's address as node:dgram gives it; the last IPv4 peer's text is reused.
  let lastV4 = -1;
  let lastV4Text = '';
  const peer = (i: number): string => {
    const m = i * F;
    if (meta[m + 1] === 4) {
      const v4 = meta[m + 2];
      if (v4 !== lastV4) {
        lastV4 = v4;
        lastV4Text = addr.toString('latin1', i * ADDR, i * ADDR + meta[m + 3]);
      }
      return lastV4Text;
    }
    return addr.toString('latin1', i * ADDR, i * ADDR + meta[m + 3]);
  };
  const onBatch = (count: number): void => {
    let at = 0;
    for (let i = 0; i < count; i++) {
      const m = i * F;
      const msg = slots[i];
      const len = meta[m];
      counters.dns_queries_udp_total++;
      let out: Buffer | null;
      try {
        out = answerQuery(msg, len, false, table, counters, rrl, rrl === null ? '' : peer(i));
      } catch {
        counters.dns_handler_errors_total++;
        out = servfail(msg, len);
      }
      if (out === null) continue;
      tx.set(out, at);
      meta[m + 4] = at;
      meta[m + 5] = out.length;
      at += out.length;
    }
  };
  // The module binds numeric addresses; a name (DNS_HOST=localhost) is resolved first, as node:dgram does.
  const ipv6 = o.host.includes(':');
  const host = isIP(o.host) ? o.host : (await lookup(o.host, { family: ipv6 ? 6 : 4 })).address;
  const { handle, port } = b.open(
    {
      host,
      port: o.port,
      reusePort: o.reusePort,
      recvBufferSize: o.recvBufferSize,
      batch: BATCH,
      stride: STRIDE,
      addresses: rrl !== null,
      rx,
      meta,
      addr,
      tx,
    },
    onBatch,
  );
  let open = true;
  return {
    port,
    close() {
      if (!open) return;
      open = false;
      b.close(handle);
    },
  };
}
