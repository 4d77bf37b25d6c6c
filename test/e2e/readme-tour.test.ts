// The README's ten-minute tour, run as written: the `sh tour` blocks of README.md, in order, against `npm start`
// on ports of the test's own. A command the README gets wrong fails here, so the tour cannot drift from the code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './dns-helpers.js';
import { freePort, killLauncher, removeLauncherDir, startLauncher } from './launcher-harness.js';

/** `npm start` runs on its embedded database: the suite's Postgres round has nothing to add here. */
const ON_POSTGRES_ROUND = process.env.TEST_DATABASE_URL ? 'npm start uses PGlite; run on the PGlite round' : false;

/** The variables the README tells the tour's reader to start `npm start` with (`A=1 B=2 npm start`). */
export function tourStartEnv(markdown: string): Record<string, string> {
  const line = /^((?:[A-Z_]+=\S+ )+)npm start$/m.exec(markdown);
  if (!line) return {};
  return Object.fromEntries(
    line[1]!
      .trim()
      .split(/ +/)
      .map((a) => a.split('=', 2) as [string, string]),
  );
}

/** The bodies of the README's fenced blocks whose info string is `sh tour`, in order. */
export function tourBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh tour\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

test(
  'the README tour runs as written and shows what it says',
  { timeout: 400_000, skip: ON_POSTGRES_ROUND },
  async (t) => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const blocks = tourBlocks(readme);
    assert.ok(blocks.length >= 5, `tour blocks found: ${blocks.length}`);
    const launcher = await startLauncher({ name: 'tour', extraEnv: tourStartEnv(readme) });
    t.after(() => {
      killLauncher(launcher);
      removeLauncherDir(launcher);
    });
    const script = `set -euo pipefail\n${blocks.join('\n')}`;
    // Its own process group: the origin it starts in the background goes with it whatever happens.
    const tour = spawn('bash', ['-c', script], {
      cwd: ROOT,
      env: { ...process.env, ...launcher.env, ORIGIN_PORT: String(await freePort()) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    t.after(() => {
      try {
        process.kill(-tour.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    });
    let out = '';
    tour.stdout.on('data', (d) => (out += d));
    tour.stderr.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => tour.once('exit', r));
    assert.equal(code, 0, out);
    assert.match(out, /"email":"you@example\.org"/, 'whoami');
    assert.match(out, /^192\.0\.2\.10$/m, 'dig answers the record');
    assert.match(out, /^ns\d\.platform\.test\.$/m, 'dig answers the NS set');
    assert.match(out, /^hello from the origin$/m, 'the edge proxies to the origin');
    assert.match(out, /^x-tour: hello\r?$/im, 'the header rule');
    assert.match(out, /^mail\s+3600\s+IN\s+A\s+192\.0\.2\.25$/m, 'the imported record in the export');
    assert.match(out, /"expires_at":"/, 'developer mode on');
    assert.match(out, /^Temporal UI: HTTP 200 at /m);
  },
);
