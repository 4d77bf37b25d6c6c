// Installs the Debian packages a benchmark needs when they are missing (as .ci/run does), so a fresh machine runs it
// with one command. Checks each package with dpkg first: an installed machine never touches apt.
import { spawnSync } from 'node:child_process';

export function ensureDebianPackages(packages: string[]): void {
  const missing = packages.filter((p) => spawnSync('dpkg', ['-s', p], { stdio: 'ignore' }).status !== 0);
  if (missing.length === 0) return;
  console.log(`installing ${missing.join(' ')} with apt-get`);
  const asRoot = process.getuid?.() === 0 ? [] : ['sudo'];
  const run = (args: string[]) => {
    const [cmd, ...rest] = [...asRoot, ...args];
    const r = spawnSync(cmd!, rest, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status ?? r.signal})`);
  };
  run(['apt-get', 'update', '-qq']);
  run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...missing]);
}
