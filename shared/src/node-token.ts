// The node token: one shared secret between the sync hub and its nodes, generated into DATA_DIR on first start.
// ensureSecret is the same pattern for other secrets kept beside it (the control plane's certificate key).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const NODE_TOKEN_FILE = 'node-token';

/** The secret stored in DATA_DIR/<file>, or undefined when there is none. */
export function readSecret(dataDir: string, file: string): string | undefined {
  try {
    const secret = readFileSync(join(dataDir, file), 'utf8').trim();
    return secret === '' ? undefined : secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The configured secret if given, else the one in DATA_DIR/<file>, generated (32 random bytes, hex, mode 0600) when absent. */
export function ensureSecret(dataDir: string, file: string, configured?: string): string {
  if (configured) return configured;
  const existing = readSecret(dataDir, file);
  if (existing) return existing;
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  try {
    // 'wx': never overwrite a secret another process wrote a moment ago.
    writeFileSync(join(dataDir, file), `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return secretWrittenByAnother(dataDir, file);
    throw err;
  }
}

/** The secret another process has just created: its file can still be empty for a moment (created, not yet written). */
function secretWrittenByAnother(dataDir: string, file: string): string {
  const end = Date.now() + 5_000;
  for (;;) {
    const secret = readSecret(dataDir, file);
    if (secret) return secret;
    if (Date.now() > end) throw new Error(`${join(dataDir, file)} stays empty`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
  }
}

/** The token stored in DATA_DIR/node-token, or undefined when there is none. */
export function readNodeToken(dataDir: string): string | undefined {
  return readSecret(dataDir, NODE_TOKEN_FILE);
}

/** The configured token if given, else the one in DATA_DIR/node-token, generated (32 random bytes, hex, mode 0600) when absent. */
export function ensureNodeToken(dataDir: string, configured?: string): string {
  return ensureSecret(dataDir, NODE_TOKEN_FILE, configured);
}
