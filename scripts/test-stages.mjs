// Which test files use the test database, and so run in CI's second stage (the whole suite again on a real Postgres
// server, .ci/run) as well as on PGlite.
//
// The two stages differ in one thing only: TEST_DATABASE_URL is set in the second. A test reaches the Postgres server
// through code that reads that variable (test/helpers/database.ts, the harnesses that use it, a few tests themselves);
// the control plane it starts reads DATABASE_URL, which only those pass on. So a file uses the database when the name
// TEST_DATABASE_URL stands anywhere in it or in a module of this repository that it imports, directly or through
// others (static imports, re-exports, import('literal'), new URL('literal', import.meta.url), and any string that names
// an existing source file of the repository, such as a script a test starts as a process); comments count too: a file
// that reaches the database in a way this cannot see names TEST_DATABASE_URL in a comment.
// Whatever this cannot follow counts as using the database: an import of a module of the repository that does not
// resolve, or an import() of a computed name. Every other file runs the same code in both stages.
//
// A mistake here cannot drop a database test silently: scripts/run-tests.mjs runs every file it calls
// database-free with scripts/test-stage-guard.mjs, which sets TEST_DATABASE_URL in that file's process to a server
// that does not exist (NO_DATABASE_URL), so a file that reached a database by a path this did not see (a child process,
// a worker) fails in the PGlite stage instead of skipping the Postgres one.
//
// node scripts/test-stages.mjs [--root DIR] [file...]: prints "database <file>" or "no-database <file>" per test file.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const DATABASE_MARK = 'TEST_DATABASE_URL';
/** What a database-free file's process gets as TEST_DATABASE_URL (port 1 on the loopback: refused at once). */
export const NO_DATABASE_URL = 'postgres://classified-database-free@127.0.0.1:1/see-scripts-test-stages-mjs';
/** The variable through which scripts/run-tests.mjs hands the database-free files to scripts/test-stage-guard.mjs. */
export const NO_DATABASE_FILES_ENV = 'TEST_STAGE_NO_DATABASE_FILES';

const skip = new Set(['node_modules', 'data', '.git', '.tmp', 'bench']);

function find(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (skip.has(entry.name)) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) find(full, out);
    else if (entry.name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}

/** Every test file of the project (*.test.ts), relative to its root, in name order. */
export function findTestFiles() {
  return find(root, []).sort();
}

const SPECIFIERS = [
  /\b(?:import|export)\s+(?:type\s+)?[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
  /\bimport\s*['"]([^'"]+)['"]/g,
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*[,)]/g,
  /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  /\bnew\s+URL\s*\(\s*['"]([^'"]+)['"]\s*,\s*import\.meta\.url/g,
];
// Any string that names a source file of the repository, beside the file or from the root ('reads.test.ts',
// 'control-plane/src/main.ts'): a script a test starts as a process (clickhouse-reads.test.ts runs three test files).
const SOURCE_PATH = /['"`]([^'"`\s$]+\.(?:ts|mts|js|mjs))['"`]/g;
// shared/src/worker-thread.ts: startModuleWorker(import.meta.url, 'name') starts ./name.ts beside the caller.
const WORKER = /\bstartModuleWorker\(\s*import\.meta\.url\s*,\s*['"]([^'"]+)['"]/g;
// import( followed by anything but a string literal: a name this cannot follow (`typeof import('x')` is a type; prose
// in comments writes "import (", which Prettier never leaves in code).
const COMPUTED_IMPORT = /(?<!typeof\s)\bimport\(\s*(?!['"]|\))/;
// Modules whose computed import() was read and is followed another way: worker-thread.ts imports the entry its callers
// name (WORKER above).
const REVIEWED_COMPUTED_IMPORTS = new Set(['shared/src/worker-thread.ts']);

function workspaces(base) {
  const out = new Map();
  let names = [];
  try {
    names = JSON.parse(readFileSync(join(base, 'package.json'), 'utf8')).workspaces ?? [];
  } catch {
    return out;
  }
  for (const dir of names) {
    try {
      const pkg = JSON.parse(readFileSync(join(base, dir, 'package.json'), 'utf8'));
      out.set(pkg.name, { dir: join(base, dir), exports: pkg.exports ?? null });
    } catch {
      /* not a package */
    }
  }
  return out;
}

function asFile(path) {
  const tries = [path];
  if (/\.(m|c)?js$/.test(path)) tries.push(path.replace(/\.(m|c)?js$/, '.ts'), path.replace(/\.(m|c)?js$/, '.tsx'));
  tries.push(`${path}.ts`, `${path}.mjs`, `${path}.js`, join(path, 'index.ts'), join(path, 'index.js'));
  return tries.find((p) => existsSync(p) && statSync(p).isFile()) ?? null;
}

function fromExports(pkg, sub) {
  const key = sub ? `./${sub}` : '.';
  const exp = pkg.exports;
  if (exp === null) return asFile(join(pkg.dir, sub || 'index'));
  if (typeof exp === 'string') return key === '.' ? asFile(join(pkg.dir, exp)) : null;
  if (exp[key] !== undefined) return typeof exp[key] === 'string' ? asFile(join(pkg.dir, exp[key])) : null;
  for (const [pattern, target] of Object.entries(exp)) {
    if (!pattern.includes('*') || typeof target !== 'string') continue;
    const [pre, post] = pattern.split('*');
    if (key.startsWith(pre) && key.endsWith(post) && key.length >= pre.length + post.length)
      return asFile(join(pkg.dir, target.replace('*', key.slice(pre.length, key.length - post.length))));
  }
  return null;
}

function isDirectory(path) {
  return existsSync(path) && statSync(path).isDirectory();
}

/** [specifier, named by a URL] for each module a source text names. */
function* specifiers(text) {
  for (const re of SPECIFIERS) for (const m of text.matchAll(re)) yield [m[1], re === SPECIFIERS.at(-1)];
  for (const m of text.matchAll(WORKER)) yield [`./${m[1]}.ts`, false];
}

/** Source files of the repository that strings in a text name as paths (only those that exist). */
function namedPaths(text, from, base) {
  const out = [];
  for (const m of text.matchAll(SOURCE_PATH))
    for (const p of [resolve(dirname(from), m[1]), resolve(base, m[1])])
      if (p.startsWith(base) && !p.includes(`${join('/', 'node_modules')}/`) && existsSync(p) && statSync(p).isFile())
        out.push(p);
  return out;
}

/**
 * A resolved path of this repository, null for a module outside it (node:, an npm package), or undefined when the
 * specifier names something of the repository that does not resolve.
 */
function resolveSpecifier(spec, from, ws) {
  if (spec.startsWith('node:')) return null;
  if (spec.startsWith('.') || spec.startsWith('/')) return asFile(resolve(dirname(from), spec)) ?? undefined;
  for (const [name, pkg] of ws)
    if (spec === name || spec.startsWith(`${name}/`)) return fromExports(pkg, spec.slice(name.length + 1)) ?? undefined;
  return null;
}

/** Classifies test files: for each, whether it uses the database and (when it does) the chain of modules that shows it. */
export function classify(files, base = root) {
  const ws = workspaces(base);
  // The graph of the repository's modules that the test files reach: each module's own reason (if any) and imports.
  const own = new Map();
  const imports = new Map();
  const todo = files.map((f) => resolve(base, f));
  while (todo.length > 0) {
    const file = todo.pop();
    if (own.has(file)) continue;
    let text = null;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      /* unreadable */
    }
    const edges = [];
    let reason = null;
    if (text === null) reason = 'unreadable';
    else if (text.includes(DATABASE_MARK)) reason = DATABASE_MARK;
    else if (COMPUTED_IMPORT.test(text) && !REVIEWED_COMPUTED_IMPORTS.has(relative(base, file)))
      reason = 'import() of a computed name';
    else
      for (const [spec, byUrl] of specifiers(text)) {
        // A directory named by URL ('dir/', '..') is data, output or native code (test/fixtures/..., test-artifacts/...,
        // dns-server/native/...), never a module it imports.
        if (byUrl && (/(^|\/)\.{0,2}$/.test(spec) || isDirectory(resolve(dirname(file), spec)))) continue;
        const target = resolveSpecifier(spec, file, ws);
        if (target === undefined) reason ??= `cannot resolve '${spec}'`;
        else if (target !== null && !edges.includes(target)) edges.push(target);
      }
    if (text !== null)
      for (const p of namedPaths(text, file, base)) if (!edges.includes(p) && p !== file) edges.push(p);
    own.set(file, reason);
    imports.set(file, edges);
    todo.push(...edges);
  }
  // Every module from which a module with a reason can be reached, walking the imports backwards from those.
  const importers = new Map();
  for (const [file, edges] of imports) for (const to of edges) importers.set(to, [...(importers.get(to) ?? []), file]);
  const toward = new Map(); // module -> the import it reaches the database through (itself when it has a reason)
  const queue = [...own].filter(([, r]) => r !== null).map(([f]) => f);
  for (const f of queue) toward.set(f, f);
  for (let i = 0; i < queue.length; i++)
    for (const from of importers.get(queue[i]) ?? [])
      if (!toward.has(from)) {
        toward.set(from, queue[i]);
        queue.push(from);
      }
  const out = new Map();
  for (const f of files) {
    let at = resolve(base, f);
    if (!toward.has(at)) {
      out.set(f, { db: false, why: [] });
      continue;
    }
    const why = [];
    while (toward.get(at) !== at) {
      why.push(relative(base, at));
      at = toward.get(at);
    }
    why.push(`${relative(base, at)} (${own.get(at)})`);
    out.set(f, { db: true, why });
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--root');
  const base = at >= 0 ? resolve(args.splice(at, 2)[1]) : root;
  const files = args.length > 0 ? args : findTestFiles();
  for (const [f, r] of classify(files, base))
    console.log(`${r.db ? 'database' : 'no-database'} ${f}${r.db ? `  (${r.why.join(' -> ')})` : ''}`);
}
