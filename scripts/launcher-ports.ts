// Ports of everything `npm start` runs: read from the environment (with the launcher's defaults), checked free
// before any process starts, and a busy one named by the variable that moves it.
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

export interface PortSpec {
  /** The environment variable that sets this port. */
  variable: string;
  /** What listens there, for messages. */
  label: string;
  host: string;
  /** 0: pick a free one now, so every process can be told the real number. */
  port: number;
  /** DNS listens on UDP and TCP. */
  udp?: boolean;
}

export class PortProblem extends Error {}

function tcpFree(host: string, port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen({ host, port, exclusive: true }, () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}

function udpFree(host: string, port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    socket.once('error', () => {
      socket.close();
      resolve(null);
    });
    socket.bind(port, host, () => {
      const bound = socket.address().port;
      socket.close(() => resolve(bound));
    });
  });
}

async function isFree(spec: PortSpec, port: number): Promise<number | null> {
  const tcp = await tcpFree(spec.host, port);
  if (tcp === null || !spec.udp) return tcp;
  return (await udpFree(spec.host, tcp)) === null ? null : tcp;
}

/** Resolves every 0 to a free port and checks every other one; throws PortProblem naming the variable. */
export async function claimPorts(specs: PortSpec[]): Promise<Map<string, number>> {
  const chosen = new Map<string, number>();
  const taken = new Set<string>();
  for (const spec of specs) {
    let port: number | null = null;
    if (spec.port === 0) {
      for (let attempt = 0; attempt < 20 && port === null; attempt++) {
        const candidate = await isFree(spec, 0);
        if (candidate !== null && !taken.has(`${spec.host}:${candidate}`)) port = candidate;
      }
      if (port === null) throw new PortProblem(`no free port for the ${spec.label} on ${spec.host} (${spec.variable})`);
    } else {
      const key = `${spec.host}:${spec.port}`;
      if (taken.has(key) || (await isFree(spec, spec.port)) === null) {
        throw new PortProblem(
          `port ${spec.port} on ${spec.host} is already in use, needed for the ${spec.label}: ` +
            `stop what listens there or set ${spec.variable} to another port (0 picks a free one)`,
        );
      }
      port = spec.port;
    }
    taken.add(`${spec.host}:${port}`);
    chosen.set(spec.variable, port);
  }
  return chosen;
}

/** Reads a port variable: unset → fallback; anything but an integer 0–65535 is a PortProblem. */
export function portFromEnv(env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = env[variable];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new PortProblem(`${variable} must be a port number 0–65535, got "${raw}"`);
  }
  return port;
}
