// The NSEC3 owner label of a name (RFC 5155 §5: SHA-1 of the name's canonical wire form, no salt, no extra
// iterations; base32hex, lower case), computed without allocating: a signed NXDOMAIN hashes one name per query, and
// node:crypto's createHash costs several microseconds per call for a one-block message. SHA-1 as FIPS 180-4 §6.1
// gives it; hash-label.test.ts checks it against node:crypto.

const block = new Uint8Array(1024); // a name is at most 255 bytes (a few more for `*.` before one)
const view = new DataView(block.buffer);
const w = new Int32Array(80);
const digest = new Int32Array(5);
const out = Buffer.allocUnsafe(32);
const B32 = Buffer.from('0123456789abcdefghijklmnopqrstuv', 'latin1');

/**
 * base32hex of SHA-1 over the wire form of `name` (lower case, labels separated by '.', a '\x00' inside a label
 * standing for a dot in it, as the query parser writes it; '' is the root).
 */
export function nsec3Label(name: string): string {
  if (name.length > 900) throw new Error('nsec3Label: not a domain name');
  // Wire form: a length byte before each label, the root's zero byte at the end.
  let n = 0;
  if (name.length > 0) {
    let lenAt = n++;
    for (let i = 0; i < name.length; i++) {
      const c = name.charCodeAt(i);
      if (c === 0x2e) {
        block[lenAt] = n - lenAt - 1;
        lenAt = n++;
      } else block[n++] = c === 0 ? 0x2e : c & 0xff;
    }
    block[lenAt] = n - lenAt - 1;
  }
  block[n++] = 0;
  const bits = n * 8;
  block[n++] = 0x80;
  while (n % 64 !== 56) block[n++] = 0;
  view.setUint32(n, 0);
  view.setUint32(n + 4, bits);
  n += 8;
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  for (let off = 0; off < n; off += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getInt32(off + t * 4);
    for (let t = 16; t < 80; t++) {
      const x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
      w[t] = (x << 1) | (x >>> 31);
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    for (let t = 0; t < 80; t++) {
      let f: number;
      let k: number;
      if (t < 20) {
        f = (b & c) | (~b & d);
        k = 0x5a827999;
      } else if (t < 40) {
        f = b ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (t < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8f1bbcdc | 0;
      } else {
        f = b ^ c ^ d;
        k = 0xca62c1d6 | 0;
      }
      const temp = (((a << 5) | (a >>> 27)) + f + e + k + w[t]) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = temp;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  // 160 bits → 32 base32hex characters: five bits at a time, most significant first.
  let o = 0;
  let acc = 0;
  let accBits = 0;
  digest[0] = h0;
  digest[1] = h1;
  digest[2] = h2;
  digest[3] = h3;
  digest[4] = h4;
  for (let i = 0; i < 5; i++) {
    const word = digest[i];
    for (let shift = 24; shift >= 0; shift -= 8) {
      acc = ((acc << 8) | ((word >>> shift) & 0xff)) & 0xfff;
      accBits += 8;
      while (accBits >= 5) {
        accBits -= 5;
        out[o++] = B32[(acc >>> accBits) & 31];
      }
    }
  }
  return out.toString('latin1', 0, 32);
}
