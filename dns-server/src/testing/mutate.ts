// Seeded random and mutated DNS packets for the fuzz tests.
import { buildQuery } from './fixtures.js';

/** mulberry32 (shared with the benchmarks), so a failing run can be replayed. */
export { prng } from '@platform/shared/testing/prng';

const NAMES = [
  'www.example.org',
  'example.org',
  'x.dev.example.org',
  'nothere.example.org',
  'big.example.org',
  'host.sub.example.org',
  'example.com',
  'alias.example.org',
];
const TYPES = [1, 2, 5, 6, 12, 15, 16, 28, 33, 41, 43, 251, 252, 255, 257, 0, 65535];

/** One packet: random bytes, or a valid query with some bytes flipped, cut, extended or counts forged. */
export function fuzzPacket(rand: () => number): Buffer {
  const int = (n: number) => Math.floor(rand() * n);
  const kind = int(6);
  if (kind === 0) {
    const b = Buffer.alloc(int(600));
    for (let i = 0; i < b.length; i++) b[i] = int(256);
    if (b.length > 2 && rand() < 0.8) b[2] &= 0x7f; // mostly "queries", so they get past the QR check
    return b;
  }
  const q = buildQuery(NAMES[int(NAMES.length)], TYPES[int(TYPES.length)], {
    id: int(65536),
    ...(rand() < 0.5 ? { edns: { udpSize: int(65536), version: int(3), do: rand() < 0.5 } } : {}),
  });
  switch (kind) {
    case 1:
      for (let n = 1 + int(4); n > 0; n--) q[int(q.length)] = int(256);
      return q;
    case 2:
      return q.subarray(0, int(q.length));
    case 3:
      return Buffer.concat([q, Buffer.from(Array.from({ length: int(64) }, () => int(256)))]);
    case 4:
      q.writeUInt16BE(int(65536), 4 + 2 * int(4));
      return q; // forged section counts
    default: {
      // A label length byte pointing past the end, or a compression pointer in the question.
      q[12] = rand() < 0.5 ? 0xc0 | int(64) : int(256);
      return q;
    }
  }
}
