// Helpers of the domain-ops, gateways and origin-protocols tests.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { TestControlPlane } from '../helpers/control-plane.js';
import { executeCommand } from '../../control-plane/src/admin/commands.js';

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Runs an admin command line in the test's control plane (e.g. `plan set <domain> pro`); fails the test on error. */
export async function admin(cp: TestControlPlane, ...argv: string[]): Promise<void> {
  const errors: string[] = [];
  const code = await executeCommand({ db: cp.app.db, configLog: cp.app.configLog, out: () => {} }, argv, (l) =>
    errors.push(l),
  );
  assert.equal(code, 0, errors.join('\n'));
}

type User = Awaited<ReturnType<TestControlPlane['user']>>;

/** A domain `name` with its owner (and a read-only key of theirs), a viewer, an editor, an admin and a stranger. */
export async function team(cp: TestControlPlane, name: string) {
  const owner = await cp.user(`owner@${name}`);
  const member = async (role: 'viewer' | 'editor' | 'admin'): Promise<User> => cp.user(`${role}@${name}`);
  const [viewer, editor, admin1, stranger] = [
    await member('viewer'),
    await member('editor'),
    await member('admin'),
    await cp.user(`stranger@${name}`),
  ];
  const ro = await cp.key(owner.id, { readOnly: true });
  const domain = await cp.domain(owner.key, name);
  await cp.addMember(domain, viewer.id, 'viewer');
  await cp.addMember(domain, editor.id, 'editor');
  await cp.addMember(domain, admin1.id, 'admin');
  /** A domain.settings write as each caller who may not make it: viewer, editor, read-only key 403; stranger 404. */
  const refused = async (write: (key: string) => Promise<{ statusCode: number; body: string }>) => {
    for (const [who, key, status] of [
      ['viewer', viewer.key, 403],
      ['editor', editor.key, 403],
      ['read-only key', ro.key, 403],
      ['stranger', stranger.key, 404],
    ] as const) {
      const r = await write(key);
      assert.equal(r.statusCode, status, `${who}: ${r.body}`);
    }
  };
  return { owner, viewer, editor, admin1, stranger, ro, domain, refused };
}
