// A ClickHouse server for the tests and the bench: Debian's clickhouse-server (installed by scripts/setup.mjs --test
// and .ci/run), run as this user on a free port of 127.0.0.1 with its data in a temporary directory, HTTP interface
// only. CLICKHOUSE_SERVER names another binary.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopProcess } from './child-process.js';
import { freePort } from './free-port.js';

export interface ClickHouseServer {
  /** http://127.0.0.1:<port> */
  url: string;
  stop(): Promise<void>;
}

/** The server binary, or null when it is not installed. */
export function clickHouseBinary(): string | null {
  const named = process.env.CLICKHOUSE_SERVER;
  if (named) return named;
  const found = spawnSync('sh', ['-c', 'command -v clickhouse-server || ls /usr/sbin/clickhouse-server'], {
    encoding: 'utf8',
  });
  return found.stdout.trim().split('\n')[0] || null;
}

const config = (dir: string, port: number) => `<yandex>
  <logger><level>warning</level><console>1</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${port}</http_port>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <users_config>${dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>32</max_concurrent_queries>
</yandex>
`;
const users = (memoryMb: number) => `<yandex>
  <profiles><default><max_memory_usage>${memoryMb * 1024 * 1024}</max_memory_usage><max_threads>2</max_threads></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`;

/** Starts a server and waits until it answers /ping; tries fresh ports if one was taken meanwhile. */
export async function startClickHouse(opts: { memoryMb?: number } = {}): Promise<ClickHouseServer> {
  const bin = clickHouseBinary();
  if (!bin)
    throw new Error(
      'clickhouse-server is not installed (npm run setup -- --test, or apt-get install clickhouse-server)',
    );
  const memoryMb = opts.memoryMb ?? 2048;
  let lastOut = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), 'clickhouse-test-'));
    const port = await freePort();
    writeFileSync(join(dir, 'config.xml'), config(dir, port));
    writeFileSync(join(dir, 'users.xml'), users(memoryMb));
    const proc: ChildProcess = spawn(bin, [`--config-file=${join(dir, 'config.xml')}`], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout!.on('data', (d) => (out = (out + d).slice(-10_000)));
    proc.stderr!.on('data', (d) => (out = (out + d).slice(-10_000)));
    const url = `http://127.0.0.1:${port}`;
    const stop = async () => {
      await stopProcess(proc, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    };
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && proc.exitCode === null && proc.signalCode === null) {
      const ok = await fetch(`${url}/ping`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return { url, stop };
      await new Promise((r) => setTimeout(r, 100));
    }
    lastOut = out;
    await stop();
  }
  throw new Error(`clickhouse-server did not start:\n${lastOut}`);
}
