// Ports handed to a child process (or to a server started later) are chosen below the kernel's ephemeral range:
// a port taken from port 0 and closed again can be given by the kernel to any outgoing connection of the parallel
// test files before the child listens on it (EADDRINUSE in CI). Each test process starts at a random point of the
// range and walks on from there, so parallel files rarely meet, and each port is checked free on TCP and UDP.
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const LOWEST = 10_000;

function highestPort(): number {
  try {
    const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (ephemeralLow > LOWEST + 2_000) return ephemeralLow - 1;
  } catch {
    // not Linux: fall through to the IANA registered range's top, below the usual ephemeral start
  }
  return 32_767;
}

const HIGHEST = highestPort();
let next = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST));

function tcpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ host: '127.0.0.1', port, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => {
      s.close();
      resolve(false);
    });
    s.bind({ address: '127.0.0.1', port, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on (TCP or UDP), outside the range the kernel gives outgoing connections. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 500; tries++) {
    const port = next;
    next = next >= HIGHEST ? LOWEST : next + 1;
    if ((await tcpFree(port)) && (await udpFree(port))) return port;
  }
  throw new Error(`no free loopback port found between ${LOWEST} and ${HIGHEST}`);
}
