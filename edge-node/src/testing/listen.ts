// Test servers on 127.0.0.1: listens on a free port and closes the server with its connections after the test (an
// edge keeps connections to its origins open, which would hold server.close() back).
import type { Server, Socket } from 'node:net';

export async function listenForTest(t: { after(fn: () => Promise<void>): void }, server: Server): Promise<number> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      }),
  );
  return (server.address() as { port: number }).port;
}
