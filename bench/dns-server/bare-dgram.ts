// The ceiling baseline: a bare Node dgram server that copies one fixed answer and patches the ID. Nothing else.
// Run: node bench/dns-server/bare-dgram.ts <port>   (plain JavaScript-compatible TypeScript, loaded through tsx)
import { createSocket } from 'node:dgram';

const port = Number(process.argv[2] ?? 5399);
// www.bench.example A 10.0.0.1, TTL 300, question name at offset 12.
const name = Buffer.from('\x03www\x05bench\x07example\x00', 'latin1');
const fixed = Buffer.concat([
  Buffer.from([0, 0, 0x84, 0, 0, 1, 0, 1, 0, 0, 0, 0]),
  name,
  Buffer.from([0, 1, 0, 1]),
  Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 10, 0, 0, 1]),
]);
const sock = createSocket({ type: 'udp4', recvBufferSize: 1 << 22 }); // same buffer as the dns-server
sock.on('message', (msg, rinfo) => {
  const out = Buffer.allocUnsafe(fixed.length);
  fixed.copy(out);
  out[0] = msg[0];
  out[1] = msg[1];
  sock.send(out, rinfo.port, rinfo.address);
});
sock.bind(port, '127.0.0.1', () => console.log(`bare dgram listening ${port}`));
