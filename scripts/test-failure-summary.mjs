// A node:test reporter that prints, after the run, one line per failed test (file, name, the error on one line).
// CI keeps only the tail of the output, and the TAP stream names a failure thousands of lines before the end.
import { relative } from 'node:path';

const ONLY_SUBTESTS_FAILED = /^\d+ subtests? failed$/;

function firstLine(error) {
  const inner = error?.cause ?? error;
  const text = inner instanceof Error ? `${inner.name}: ${inner.message}` : String(inner);
  return text.replace(/\s*\n\s*/g, ' ⏎ ').slice(0, 300);
}

export default async function* failureSummary(source) {
  const failures = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    const message = firstLine(details?.error);
    if (ONLY_SUBTESTS_FAILED.test(message.replace(/^Error: /, ''))) continue;
    failures.push(`# ✖ ${file ? relative(process.cwd(), file) : '?'} › ${name} — ${message}`);
  }
  if (failures.length === 0) return;
  yield `# ${failures.length} failed test${failures.length === 1 ? '' : 's'}:\n${failures.join('\n')}\n`;
}
