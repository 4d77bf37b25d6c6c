// The node token: one shared secret between the sync hub and its nodes, generated into DATA_DIR on first start.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const NODE_TOKEN_FILE = 'node-token';

/** The token stored in DATA_DIR/node-token, or undefined when there is none. */
export function readNodeToken(dataDir: string): string | undefined {
  try {
    const token = readFileSync(join(dataDir, NODE_TOKEN_FILE), 'utf8').trim();
    return token === '' ? undefined : token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The configured token if given, else the one in DATA_DIR/node-token, generated (32 random bytes, hex, mode 0600) when absent. */
export function ensureNodeToken(dataDir: string, configured?: string): string {
  if (configured) return configured;
  const existing = readNodeToken(dataDir);
  if (existing) return existing;
  mkdirSync(dataDir, { recursive: true });
  const token = randomBytes(32).toString('hex');
  try {
    // 'wx': never overwrite a token another process wrote a moment ago.
    writeFileSync(join(dataDir, NODE_TOKEN_FILE), `${token}\n`, { mode: 0o600, flag: 'wx' });
    return token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readNodeToken(dataDir)!;
    throw err;
  }
}
