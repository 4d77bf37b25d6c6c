// `npm install` on the Node version the README names prints no EBADENGINE: every package in the lock accepts it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { ROOT } from '../e2e/dns-helpers.js';

test('every locked package accepts the lowest Node version package.json promises', () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  const lowest = semver.minVersion(manifest.engines.node)!.version;
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[]; optional?: boolean }>;
  };
  const refusing = Object.entries(lock.packages)
    .filter(([, p]) => !Array.isArray(p.engines) && p.engines?.node && !semver.satisfies(lowest, p.engines.node))
    .map(([path, p]) => `${path}@${p.version} wants node ${(p.engines as { node: string }).node}`);
  assert.deepEqual(refusing, [], `these warn EBADENGINE on Node ${lowest}`);
});
