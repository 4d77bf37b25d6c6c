// A node:test reporter that records how long each test file took (seconds) in test-artifacts/test-durations.json,
// merged with what an earlier run recorded. scripts/run-tests.mjs starts the longest files first with it, so the two
// slots finish together instead of one slot running a long file alone at the end.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// TEST_DURATIONS_FILE: somewhere else (scripts/test-durations.test.ts runs the reporter on files of its own).
export const DURATIONS_FILE = process.env.TEST_DURATIONS_FILE || join(root, 'test-artifacts', 'test-durations.json');

export function readDurations(file = DURATIONS_FILE) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

/**
 * Each file's duration in milliseconds from the runner's events. The runner (node 20 with --test) reports a file as a
 * test of its own at nesting 0 named by the file's path: its test:complete event, sent when the file's process ends,
 * carries the file's wall time (module loading and top-level code included). The file's own tests reach a reporter
 * only later, one file at a time in the order the files were started, so when their events arrive says nothing about
 * how long the file ran. A file without that event (another node version) counts the sum of its top-level tests.
 */
export function fileDurations(events) {
  const whole = new Map();
  const sum = new Map();
  for (const event of events) {
    const d = event.data;
    const file = d?.file;
    if (!file || d.nesting !== 0) continue;
    const ms = d.details?.duration_ms ?? 0;
    if (d.name === file || resolve(root, String(d.name)) === file) {
      if (event.type === 'test:complete' || event.type === 'test:pass' || event.type === 'test:fail')
        whole.set(file, Math.max(whole.get(file) ?? 0, ms));
      continue;
    }
    if (event.type === 'test:pass' || event.type === 'test:fail') sum.set(file, (sum.get(file) ?? 0) + ms);
    else if (!sum.has(file)) sum.set(file, 0);
  }
  const out = new Map();
  for (const [file, ms] of sum) out.set(file, ms);
  for (const [file, ms] of whole) out.set(file, ms);
  return out;
}

export default async function* testDurations(source) {
  const events = [];
  for await (const event of source)
    if (event.data?.file && event.data.nesting === 0 && /^test:(complete|pass|fail|enqueue)$/.test(event.type))
      events.push({ type: event.type, data: event.data });
  const measured = fileDurations(events);
  if (measured.size === 0) return;
  const durations = readDurations();
  for (const [file, ms] of measured) durations[relative(root, file)] = Math.round(ms / 100) / 10;
  mkdirSync(dirname(DURATIONS_FILE), { recursive: true });
  writeFileSync(DURATIONS_FILE, `${JSON.stringify(durations, Object.keys(durations).sort(), 2)}\n`);
  yield `# durations of ${measured.size} test file${measured.size === 1 ? '' : 's'} in ${relative(root, DURATIONS_FILE)}\n`;
}
