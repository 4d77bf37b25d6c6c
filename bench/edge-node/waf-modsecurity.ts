// The WAF corpora (test/fixtures/waf) through nginx + ModSecurity v3 + OWASP CRS 3.3 (Debian's
// libnginx-mod-http-modsecurity and modsecurity-crs, installed with apt-get when missing), on 127.0.0.1 only:
// detection and false-positive rates at each paranoia level (anomaly threshold 5, CRS's default; allowed methods
// widened to ours, GET HEAD POST PUT PATCH DELETE OPTIONS, so that REST calls are not counted against it), then
// ModSecurity's cost per request: the benign corpus sent in turn, one request at a time on a kept-alive connection,
// to an nginx server with ModSecurity on and to the same proxy with it off (both pass to a third server answering
// 200), alternating rounds; the difference per request is ModSecurity's cost. Bounded: 3 rounds of the corpus each.
// Run: node --import tsx bench/edge-node/waf-modsecurity.ts
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCorpus, type CorpusEntry } from '../../edge-node/src/testing/waf-corpus.js';

const MODULE = '/usr/lib/nginx/modules/ngx_http_modsecurity_module.so';
const CRS = '/usr/share/modsecurity-crs/rules';
const CRS_SETUP = '/etc/modsecurity/crs/crs-setup.conf';
if (!existsSync(MODULE) || !existsSync(CRS)) {
  const r = spawnSync('apt-get', ['install', '-y', '-q', 'nginx', 'libnginx-mod-http-modsecurity', 'modsecurity-crs'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (r.status !== 0) throw new Error('apt-get install failed');
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'waf-modsec-'));
let nginx: ChildProcess | undefined;
process.on('exit', () => {
  nginx?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function start(pl: number): Promise<{ on: number; off: number }> {
  const [on, off, back] = [await freePort(), await freePort(), await freePort()];
  writeFileSync(
    join(dir, 'main.conf'),
    `SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit 13107200
SecRequestBodyNoFilesLimit 131072
SecRequestBodyLimitAction ProcessPartial
SecRule REQUEST_HEADERS:Content-Type "@rx ^application/json" "id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRule REQUEST_HEADERS:Content-Type "@rx (?:application(?:/soap\\+|/)|text/)xml" "id:200000,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"
SecRule REQBODY_ERROR "!@eq 0" "id:200002,phase:2,t:none,log,deny,status:400,msg:'Failed to parse request body.'"
SecResponseBodyAccess Off
SecAuditEngine Off
SecTmpDir ${dir}
SecDataDir ${dir}
SecAction "id:900000,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=${pl}"
SecAction "id:900200,phase:1,nolog,pass,t:none,setvar:'tx.allowed_methods=GET HEAD POST PUT PATCH DELETE OPTIONS'"
Include ${CRS_SETUP}
Include ${CRS}/*.conf
`,
  );
  writeFileSync(
    join(dir, 'nginx.conf'),
    `load_module ${MODULE};
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log error;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  client_max_body_size 10m;
  upstream back { server 127.0.0.1:${back}; keepalive 8; }
  server { listen 127.0.0.1:${on}; modsecurity on; modsecurity_rules_file ${dir}/main.conf;
    location / { proxy_pass http://back; proxy_http_version 1.1; proxy_set_header Connection ""; } }
  server { listen 127.0.0.1:${off};
    location / { proxy_pass http://back; proxy_http_version 1.1; proxy_set_header Connection ""; } }
  server { listen 127.0.0.1:${back}; location / { return 200 "ok\\n"; } }
}
`,
  );
  nginx = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: ['ignore', 'inherit', 'inherit'] });
  for (let i = 0; i < 200; i++) {
    try {
      if ((await send(off, { method: 'GET', path: '/', headers: {} }, new Agent())) === 200) break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { on, off };
}

async function stop(): Promise<void> {
  const n = nginx;
  nginx = undefined;
  if (!n) return;
  await new Promise<void>((r) => {
    n.once('exit', () => r());
    n.kill('SIGTERM');
  });
}

function send(port: number, e: CorpusEntry, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = e.body === undefined ? undefined : Buffer.from(e.body, 'utf8');
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: e.method,
        path: e.path,
        agent,
        headers: { host: 'waf.bench.example', ...e.headers, ...(body ? { 'content-length': body.length } : {}) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const sets = [
  ['tuning', loadCorpus('attacks'), loadCorpus('benign')],
  ['held out', loadCorpus('holdout-attacks'), loadCorpus('holdout-benign')],
] as const;
const rows: Record<string, unknown>[] = [];
for (const pl of [1, 2, 3, 4]) {
  const { on } = await start(pl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  for (const [name, attacks, benign] of sets) {
    let blocked = 0;
    let refused = 0;
    for (const e of attacks) {
      const s = await send(on, e, agent).catch(() => 0);
      if (s === 403) blocked++;
      else if (s !== 200) refused++;
    }
    let fp = 0;
    for (const e of benign) if ((await send(on, e, agent).catch(() => 0)) !== 200) fp++;
    rows.push({
      corpus: name,
      paranoia: pl,
      'blocked % (403)': ((100 * blocked) / attacks.length).toFixed(1),
      'other refusals %': ((100 * refused) / attacks.length).toFixed(1),
      'false positives %': ((100 * fp) / benign.length).toFixed(1),
    });
  }
  agent.destroy();
  await stop();
}
console.log('nginx + ModSecurity v3 + OWASP CRS 3.3 (anomaly threshold 5)');
console.table(rows);

// Cost: the benign corpus in turn, ModSecurity on vs off, alternating rounds.
const { on, off } = await start(1);
const benign = loadCorpus('benign');
const times = { on: 0, off: 0 };
for (let round = 0; round < 3; round++)
  for (const [name, port] of round % 2 === 0
    ? ([
        ['on', on],
        ['off', off],
      ] as const)
    : ([
        ['off', off],
        ['on', on],
      ] as const)) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const t0 = performance.now();
    for (const e of benign) await send(port, e, agent);
    times[name] += performance.now() - t0;
    agent.destroy();
  }
await stop();
const n = 3 * benign.length;
console.log(
  `per request: ModSecurity on ${((1000 * times.on) / n).toFixed(0)} us, off ${((1000 * times.off) / n).toFixed(0)} us, ` +
    `ModSecurity's cost ${((1000 * (times.on - times.off)) / n).toFixed(0)} us (PL1, benign corpus, ${n} requests each)`,
);
process.exit(0);
