// The admin socket: a Unix socket in DATA_DIR through which the admin CLI runs its commands inside a running control
// plane that owns a PGlite database. Only local users who can open DATA_DIR (and so the database files) can use it.
import { createServer, request, type Server } from 'node:http';
import { chmodSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../db/index.js';
import type { ConfigLog } from '../config-log/index.js';
import { executeCommand } from './commands.js';

export const ADMIN_SOCKET = 'admin.sock';

export interface AdminResult {
  code: number;
  stdout: string[];
  stderr: string[];
}

export async function startAdminSocket(opts: {
  dataDir: string;
  db: Db;
  configLog: ConfigLog;
}): Promise<{ close(): Promise<void> }> {
  const path = join(opts.dataDir, ADMIN_SOCKET);
  rmSync(path, { force: true }); // left by a process that died; the data-dir lock says we own DATA_DIR now
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      void (async () => {
        const result: AdminResult = { code: 2, stdout: [], stderr: [] };
        try {
          const { argv } = JSON.parse(body) as { argv: unknown };
          if (!Array.isArray(argv) || argv.some((a) => typeof a !== 'string'))
            throw new Error('argv must be an array of strings');
          const ctx = { db: opts.db, configLog: opts.configLog, out: (l: string) => result.stdout.push(l) };
          result.code = await executeCommand(ctx, argv as string[], (l) => result.stderr.push(l));
        } catch (e) {
          result.stderr.push(`error: ${e instanceof Error ? e.message : String(e)}`);
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  chmodSync(path, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          rmSync(path, { force: true });
          resolve();
        });
      }),
  };
}

/** Runs argv in the control plane that owns dataDir; null when no admin socket answers. */
export function sendToAdminSocket(dataDir: string, argv: string[]): Promise<AdminResult | null> {
  const socketPath = join(dataDir, ADMIN_SOCKET);
  if (!existsSync(socketPath)) return Promise.resolve(null);
  return new Promise((resolve) => {
    const req = request(
      { socketPath, path: '/', method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => {
          try {
            resolve(JSON.parse(body) as AdminResult);
          } catch {
            resolve(null);
          }
        });
      },
    );
    req.on('error', () => resolve(null));
    req.end(JSON.stringify({ argv }));
  });
}
