// Summarises a V8 CPU profile (node --cpu-prof) as a markdown table of the functions with the most self time: one
// row per function (name, file:line), its share of the busy samples (idle left out) and of all samples.
// Usage: node --import tsx bench/edge-node/cpuprofile-top.ts <file.cpuprofile> [rows (default 10)] [from seconds]
//   [until seconds]
//   from / until: only the samples between these seconds of the profile (leaving out the process's start-up and
//   warm-up, and its exit: pino's fsync of the log at exit is not a request's cost).
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, rowsText, fromText, untilText] = process.argv.slice(2);
if (!file) throw new Error('usage: cpuprofile-top.ts <file.cpuprofile> [rows] [from seconds] [until seconds]');
const rows = Number(rowsText ?? 10);
const fromUs = Number(fromText ?? 0) * 1e6;
const untilUs = untilText === undefined ? Infinity : Number(untilText) * 1e6;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const nameOf = new Map<number, string>();
for (const n of profile.nodes) {
  const { functionName, url, lineNumber } = n.callFrame;
  const where = url === '' ? '' : ` (${shortUrl(url)}:${lineNumber + 1})`;
  nameOf.set(n.id, `${functionName || '(anonymous)'}${where}`);
}

function shortUrl(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('node_modules/');
  if (nm >= 0) return path.slice(nm + 'node_modules/'.length);
  return path.startsWith('/') ? relative(process.cwd(), path) : path;
}

const selfUs = new Map<string, number>();
let total = 0;
let at = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const us = profile.timeDeltas[i] ?? 0;
  at += us;
  if (at < fromUs || at > untilUs) continue;
  const name = nameOf.get(profile.samples[i]) ?? '?';
  selfUs.set(name, (selfUs.get(name) ?? 0) + us);
  total += us;
}
const idle = selfUs.get('(idle)') ?? 0;
const busy = total - idle;
const top = [...selfUs].filter(([n]) => n !== '(idle)').sort((a, b) => b[1] - a[1]);

console.log(
  `${(total / 1e6).toFixed(1)} s sampled, ${((100 * busy) / total).toFixed(1)} % busy (${(idle / 1e6).toFixed(1)} s idle)`,
);
console.log('');
console.log('| # | function (file:line) | self ms | % of busy |');
console.log('|---|---|---|---|');
top.slice(0, rows).forEach(([name, us], i) => {
  console.log(`| ${i + 1} | \`${name}\` | ${(us / 1000).toFixed(0)} | ${((100 * us) / busy).toFixed(1)} |`);
});
