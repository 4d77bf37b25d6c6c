// Installs what a fresh clone is missing: node modules and the Temporal CLI (dev server + UI).
// Runs before `npm start`, `npm test` and `npm run check`; every step is skipped when already done.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const modulesOnly = process.argv.includes('--modules-only');
export const TEMPORAL_CLI_VERSION = 'v1.5.1';

function log(msg) {
  process.stderr.write(`[setup] ${msg}\n`);
}

function ensureNodeModules() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  const stale = !existsSync(marker) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs + 1000);
  if (!stale) return;
  log('installing node modules (npm install)…');
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    log('npm install failed');
    process.exit(r.status ?? 1);
  }
}

function onPath(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim() || null;
}

/** Where the provisioned temporal CLI lives; shared by every clone on this machine so it is built once. */
export function temporalCliPath() {
  const cacheDir =
    process.env.PLATFORM_TOOLS_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-dns-platform', 'bin');
  return join(cacheDir, 'temporal');
}

function ensureTemporalCli() {
  if (process.env.TEMPORAL_CLI && existsSync(process.env.TEMPORAL_CLI)) return;
  const target = temporalCliPath();
  if (existsSync(target)) return;
  if (!onPath('go')) {
    log(
      'the Temporal CLI is missing and Go is not installed: install Go (https://go.dev/doc/install) or set TEMPORAL_CLI to an existing `temporal` binary',
    );
    process.exit(1);
  }
  mkdirSync(dirname(target), { recursive: true });
  log(`building the Temporal CLI ${TEMPORAL_CLI_VERSION} with go install (first run only, a few minutes)…`);
  const r = spawnSync('go', ['install', `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`], {
    stdio: 'inherit',
    env: { ...process.env, GOBIN: dirname(target) },
  });
  if (r.status !== 0 || !existsSync(target)) {
    log('go install of the Temporal CLI failed');
    process.exit(1);
  }
  log(`Temporal CLI ready at ${target}`);
}

/** Debian tools the test suite drives as a user would (named-checkzone; dig and curl of the README tour). */
function ensureDebianTools() {
  const wanted = [
    ['named-checkzone', 'bind9-utils'],
    ['dig', 'bind9-dnsutils'],
    ['curl', 'curl'],
  ];
  const missing = wanted.filter(([cmd]) => !onPath(cmd)).map(([, pkg]) => pkg);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !onPath('apt-get')) {
    log(`missing Debian packages: ${missing.join(' ')} (install them with apt-get; tests that need them will fail)`);
    return;
  }
  log(`installing Debian packages: ${missing.join(' ')}`);
  try {
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch {
    execFileSync('apt-get', ['update'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  ensureNodeModules();
  if (!modulesOnly) {
    ensureTemporalCli();
    if (process.argv.includes('--test')) ensureDebianTools();
  }
}
