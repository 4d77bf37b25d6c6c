// Issue 10 item 6 through running processes: a tenant cannot make the edge present another tenant's host name to a
// shared origin (record host_header, origin_route, origin_pool), while both tenants keep being served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { startControlPlane } from './sync-harness.js';
import { startEdgeNodeProcess, waitUntil } from './edge-harness.js';

test(
  'host headers: another tenant’s name is refused at write time; both tenants are served',
  { timeout: 240_000 },
  async (t) => {
    const shared = await startStubOrigin('shared', (req, res) => res.end(`host=${req.headers.host} ${req.url}`));
    t.after(() => shared.close());
    const cp = await startControlPlane('edge-host-header');
    t.after(() => cp.stop());
    const attacker = 'hh-attacker.example';
    const victim = 'hh-victim.example';
    await cp.api('POST', '/domains/', { name: attacker });
    let victimKey = '';
    await cp.restart(() => {
      cp.cli('user', 'create', 'victim@example.org');
      victimKey = cp.cli('key', 'create', 'victim@example.org').split('\n').pop()!.trim();
      cp.cli('plan', 'override', attacker, 'host_header_edit_enabled', 'true');
      cp.cli('plan', 'override', attacker, 'disabled_rule_types', '[]');
    });
    const asVictim = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${cp.apiUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${victimKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200, await res.text());
    };
    await asVictim('POST', '/domains/', { name: victim });
    const origin = { type: 'A', destination: '127.0.0.1', proxied: true, scheme: 'Http', port: shared.port };
    await asVictim('POST', `/domains/${victim}/records/`, { name: 'www', ...origin });
    const rec = await cp.api<{ id: number }>('POST', `/domains/${attacker}/records/`, { name: 'www', ...origin });

    const theirs = `www.${victim}`;
    const refused = (text: string) =>
      assert.match(
        text,
        /www\.hh-victim\.example is not inside this domain or another active domain of the same owner/,
      );
    const tryWrite = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${cp.apiUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${cp.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 400, `${method} ${path}`);
      refused(((await res.json()) as { error: string }).error);
    };
    await tryWrite('PUT', `/domains/${attacker}/records/${rec.id}`, { host_header: theirs });
    await tryWrite('POST', `/domains/${attacker}/rules/origin_route/`, {
      address: '127.0.0.1',
      port: shared.port,
      host_header: theirs,
    });
    await tryWrite('POST', `/domains/${attacker}/rules/origin_pool/`, {
      origins: [{ address: '127.0.0.1', port: shared.port, host_header: theirs }],
    });
    // A name of its own is fine.
    await cp.api('PUT', `/domains/${attacker}/records/${rec.id}`, { host_header: `api.${attacker}` });

    const edge = await startEdgeNodeProcess(cp);
    t.after(() => edge.stop());
    const mine = await waitUntil('the attacker’s record with its own host header', async () => {
      const r = await send(edge.httpPort, `www.${attacker}`, '/attacker');
      return r.status === 200 && r.body.startsWith(`host=api.${attacker}`) ? r : undefined;
    });
    assert.equal(mine.body, `host=api.${attacker} /attacker`);
    const other = await send(edge.httpPort, theirs, '/victim');
    assert.equal(other.status, 200);
    assert.equal(other.body, `host=${theirs} /victim`);
    for (const s of shared.seen) if (s.url.startsWith('/attacker')) assert.notEqual(s.headers.host, theirs);
  },
);
