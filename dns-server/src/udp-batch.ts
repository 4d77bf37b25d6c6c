// The UDP listener over the batch-udp native module (dns-server/native/batch-udp): the module drains the socket
// with recvmmsg and calls `onBatch` once per batch; each query is answered by the same handler as over node:dgram,
// written straight into one buffer of answers that goes out with one sendmmsg. DNS_UDP_IO=dgram keeps node:dgram.
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { fileURLToPath } from 'node:url';
import { answerQueryInto, MAX_ANSWER, servfailInto } from './handler.js';
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
      slot: number;
      addresses: boolean;
      faultEvery: number;
      rx: Buffer;
      ovf: Buffer;
      meta: Int32Array;
      addr: Buffer;
      tx: Buffer;
    },
    onBatch: (count: number) => void,
  ): { handle: object; port: number };
  close(handle: object): void;
  META_FIELDS: number;
  ADDR_TEXT: number;
  /** A slot and its overflow area together hold any datagram. */
  OVERFLOW: number;
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
/** Receive slot: the bytes of a datagram read into the packed slots (a query fits); the rest goes to its overflow area. */
const SLOT = 1024;
/** Slots one cache line apart more than their size, so that their starts do not all share a few cache sets. */
const STRIDE = SLOT + 64;
/** Answers of one batch, packed: room for BATCH answers of the largest size. */
const TX_SIZE = BATCH * MAX_ANSWER;

export interface BatchUdpOptions {
  host: string;
  port: number;
  /** SO_REUSEPORT: node:cluster workers each bind their own socket on the shared port. */
  reusePort: boolean;
  recvBufferSize: number;
  table: ZoneTable;
  counters: Counters;
  rrl: ResponseRateLimiter | null;
  /** Tests only: every n-th batch the socket takes half the answers, then reports EAGAIN (0 or absent: off). */
  faultEveryNthSend?: number;
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
  const OVF = b.OVERFLOW - SLOT;
  const ovf = Buffer.allocUnsafeSlow(BATCH * OVF);
  // A datagram longer than a slot (rare: a query is a few dozen bytes) is put back together here.
  const whole = Buffer.allocUnsafeSlow(b.OVERFLOW);
  const meta = new Int32Array(BATCH * F);
  const addr = Buffer.allocUnsafeSlow(BATCH * ADDR);
  const tx = Buffer.allocUnsafeSlow(TX_SIZE);
  // One view per slot, made once: the handler reads msg[0, len).
  const slots = Array.from({ length: BATCH }, (_, i) => rx.subarray(i * STRIDE, i * STRIDE + SLOT));
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
      const len = meta[m];
      let msg = slots[i];
      if (len > SLOT) {
        rx.copy(whole, 0, i * STRIDE, i * STRIDE + SLOT);
        ovf.copy(whole, SLOT, i * OVF, i * OVF + len - SLOT);
        msg = whole;
      }
      counters.dns_queries_udp_total++;
      let n: number;
      try {
        n = answerQueryInto(msg, len, false, table, counters, rrl, rrl === null ? '' : peer(i), tx, at);
      } catch {
        counters.dns_handler_errors_total++;
        n = servfailInto(msg, len, tx, at);
      }
      meta[m + 4] = at;
      meta[m + 5] = n;
      at += n;
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
      slot: SLOT,
      addresses: rrl !== null,
      faultEvery: o.faultEveryNthSend ?? 0,
      rx,
      ovf,
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
