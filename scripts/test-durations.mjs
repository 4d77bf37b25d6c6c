// A node:test reporter that records how long each test file took (seconds) in test-artifacts/test-durations.json,
// merged with what an earlier run recorded. scripts/run-tests.mjs starts the longest files first with it, so the two
// slots finish together instead of one slot running a long file alone at the end.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const DURATIONS_FILE = join(root, 'test-artifacts', 'test-durations.json');

export function readDurations(file = DURATIONS_FILE) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

export default async function* testDurations(source) {
  // Per file: the first and last time one of its events arrived, and the sum of its top-level tests' durations (the
  // events carry no timestamps; the larger of the two is the file's time).
  const seen = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    const now = Date.now();
    const s = seen.get(file) ?? { first: now, last: now, sum: 0 };
    s.last = now;
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0)
      s.sum += event.data.details?.duration_ms ?? 0;
    seen.set(file, s);
  }
  if (seen.size === 0) return;
  const durations = readDurations();
  for (const [file, s] of seen)
    durations[relative(root, file)] = Math.round(Math.max(s.last - s.first, s.sum) / 100) / 10;
  mkdirSync(dirname(DURATIONS_FILE), { recursive: true });
  writeFileSync(DURATIONS_FILE, `${JSON.stringify(durations, Object.keys(durations).sort(), 2)}\n`);
  yield `# durations of ${seen.size} test file${seen.size === 1 ? '' : 's'} in ${relative(root, DURATIONS_FILE)}\n`;
}
