// Installs what a fresh clone is missing: node modules, the Temporal CLI (dev server + UI) and, for the tests (`--test`)
// or on demand (`--pebble`), Pebble, Let's Encrypt's test ACME server.
// Runs before `npm start`, `npm test` and `npm run check`; every step is skipped when already done.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const modulesOnly = process.argv.includes('--modules-only');
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
/** Pebble (github.com/letsencrypt/pebble), built with `go install` like the Temporal CLI. */
export const PEBBLE_VERSION = 'v2.10.1';

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

/** The machine-wide cache of built tools; shared by every clone on this machine so each is built once. */
function toolsDir() {
  return (
    process.env.PLATFORM_TOOLS_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-dns-platform', 'bin')
  );
}

/** Where the provisioned temporal CLI lives. */
export function temporalCliPath() {
  return join(toolsDir(), 'temporal');
}

/** Where the provisioned Pebble lives (PEBBLE_BIN: an existing binary instead); versioned, so an upgrade rebuilds. */
export function pebblePath() {
  if (process.env.PEBBLE_BIN) return process.env.PEBBLE_BIN;
  return join(toolsDir(), `pebble-${PEBBLE_VERSION}`);
}

/** Builds `pkg@version` with `go install` into the tools cache as `target` (first run only). */
function goInstall(what, pkg, version, target, envOverride) {
  if (!onPath('go')) {
    log(
      `${what} is missing and Go is not installed: install Go (https://go.dev/doc/install) or set ${envOverride} to an existing binary`,
    );
    process.exit(1);
  }
  mkdirSync(dirname(target), { recursive: true });
  log(`building ${what} ${version} with go install (first run only, a few minutes)…`);
  // Built into a private GOBIN, then renamed into place: a half-built binary is never taken for a finished one.
  const gobin = mkdtempSync(join(dirname(target), '.build-'));
  try {
    const r = spawnSync('go', ['install', `${pkg}@${version}`], {
      stdio: 'inherit',
      env: { ...process.env, GOBIN: gobin },
    });
    const built = join(gobin, pkg.split('/').pop());
    if (r.status !== 0 || !existsSync(built)) {
      log(`go install of ${what} failed`);
      process.exit(1);
    }
    renameSync(built, target);
  } finally {
    rmSync(gobin, { recursive: true, force: true });
  }
  log(`${what} ready at ${target}`);
}

function ensureTemporalCli() {
  if (process.env.TEMPORAL_CLI && existsSync(process.env.TEMPORAL_CLI)) return;
  const target = temporalCliPath();
  if (existsSync(target)) return;
  goInstall('the Temporal CLI', 'github.com/temporalio/cli/cmd/temporal', TEMPORAL_CLI_VERSION, target, 'TEMPORAL_CLI');
}

/** Pebble for the ACME tests (test/e2e/acme-*.test.ts) and for trying issuance locally (`npm run setup -- --pebble`). */
export function ensurePebble() {
  const target = pebblePath();
  if (existsSync(target)) return target;
  goInstall('Pebble', 'github.com/letsencrypt/pebble/v2/cmd/pebble', PEBBLE_VERSION, target, 'PEBBLE_BIN');
  return target;
}

/**
 * Debian tools the test suite drives as a user would (named-checkzone; dig and curl of the README tour), and the
 * ClickHouse server the analytics store's ClickHouse backend is tested against (clickhouse.test.ts, run by the test
 * as this user on a free port; the package's own service is not used).
 */
function ensureDebianTools() {
  const wanted = [
    ['named-checkzone', 'bind9-utils'],
    ['dig', 'bind9-dnsutils'],
    ['curl', 'curl'],
    ['clickhouse-server', 'clickhouse-server'],
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

/** node-gyp: the project's (a dependency's) copy, else the one bundled with npm. */
function findNodeGyp() {
  const tail = ['node_modules', 'node-gyp', 'bin', 'node-gyp.js'];
  return [
    join(root, ...tail),
    process.env.npm_execpath && join(dirname(process.env.npm_execpath), '..', ...tail),
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', ...tail),
  ].find((f) => f && existsSync(f));
}

/**
 * A native module of the project (C with node-gyp against the headers of the Node that runs this, e.g.
 * /usr/include/node — no download), built when missing or older than its sources. Without a C toolchain or when the
 * build fails: a clear message and exit 1, unless the module's JavaScript fallback is chosen by its env switch, or the
 * module is optional (then the message only).
 */
function ensureNativeModule({ folder, file, what, switchName, switchValue, fallback, optional = false }) {
  const dir = join(root, ...folder.split('/'));
  const built = join(dir, 'build', 'Release', file);
  const sources = [join(dir, 'binding.gyp'), ...readdirSync(join(dir, 'src')).map((f) => join(dir, 'src', f))];
  if (existsSync(built) && sources.every((f) => statSync(f).mtimeMs <= statSync(built).mtimeMs)) return;
  const fallbackChosen = optional || process.env[switchName] === switchValue;
  const chosen = optional ? 'optional' : `${switchName}=${switchValue}`;
  const gyp = findNodeGyp();
  const missing = [
    ['cc', 'a C compiler'],
    ['make', 'make'],
    ['python3', 'python3'],
  ]
    .filter(([cmd]) => !onPath(cmd))
    .map(([, name]) => name);
  if (!gyp) missing.push('node-gyp (npm install, or an npm that bundles it)');
  if (missing.length > 0) {
    if (fallbackChosen) {
      log(`${what} not built (missing ${missing.join(', ')}); ${chosen}: ${fallback}`);
      return;
    }
    log(
      `cannot build ${what} (${folder}): missing ${missing.join(', ')}. Install them (Debian: apt-get install ` +
        `build-essential python3) or set ${switchName}=${switchValue} (${fallback}).`,
    );
    process.exit(1);
  }
  const prefix = join(dirname(process.execPath), '..');
  const nodedir = existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
  log(`building ${what} (${folder}, node-gyp)…`);
  const r = spawnSync(process.execPath, [gyp, 'rebuild', '--loglevel=warn', ...nodedir], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0 || !existsSync(built)) {
    log(`building ${what} failed (see above); ${chosen}: ${fallback}`);
    if (!fallbackChosen) process.exit(1);
  }
}

/** The dns-server's batched UDP module (recvmmsg/sendmmsg: Linux only; elsewhere set DNS_UDP_IO=dgram). */
function ensureBatchUdp() {
  if (process.platform !== 'linux') return;
  ensureNativeModule({
    folder: 'dns-server/native/batch-udp',
    file: 'batch_udp.node',
    what: "the dns-server's batched UDP module",
    switchName: 'DNS_UDP_IO',
    switchValue: 'dgram',
    fallback: 'the dns-server answers UDP through node:dgram',
  });
}

/** The edge's native HTTP/1.1 origin client. */
function ensureNativeOriginClient() {
  ensureNativeModule({
    folder: 'edge-node/native/origin-client',
    file: 'origin_client.node',
    what: "the edge's native origin client",
    switchName: 'EDGE_ORIGIN_CLIENT',
    switchValue: 'js',
    fallback: 'the edge runs on the TypeScript origin client',
  });
}

/** Issue 12's native HTTP front, a measuring tool (bench/edge-node/wrk-front.sh), not on the edge's serving path. */
function ensureHttpFront() {
  if (process.platform !== 'linux') return;
  ensureNativeModule({
    folder: 'edge-node/native/http-front',
    file: 'http_front.node',
    what: 'the http-front bench module',
    optional: true,
    fallback: 'its tests and the native-front row of bench/edge-node/wrk-front.sh are skipped',
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  ensureNodeModules();
  ensureBatchUdp();
  if (!modulesOnly) {
    ensureNativeOriginClient();
    ensureHttpFront();
    ensureTemporalCli();
    if (process.argv.includes('--test')) ensureDebianTools();
    if (process.argv.includes('--test') || process.argv.includes('--pebble')) ensurePebble();
  }
}
