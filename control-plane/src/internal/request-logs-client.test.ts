// Request log records carrying what fingerprint and bot_route rules saw (fp, bot, botClass): stored in
// request_logs (migration 0017), typed and bounded whatever a node sends; records without them store '' / 0 / ''.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';
import { requestLogs } from '../db/schema.js';

const FP = 'ge11cr08enus_0123456789ab_0123456789ab_0123456789ab';

test('request logs keep the fingerprint and the bot score', async (t) => {
  const cp = await startTestControlPlane(t);
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const base = { t: Date.now(), method: 'GET', status: 200, bytes: 1, cache: '', rules: [], ms: 1, upstreamMs: 1 };
  const records = [
    { ...base, host: 'a.client.example.org', path: '/', peer: '192.0.2.1', fp: FP, bot: 99, botClass: 'human' },
    { ...base, host: 'b.client.example.org', path: '/', peer: '192.0.2.2' },
    // Whatever a node sends: a long or odd fingerprint, a score out of range, an unknown class.
    {
      ...base,
      host: 'c.client.example.org',
      path: '/',
      peer: '192.0.2.3',
      fp: 'X'.repeat(10_000),
      bot: 500,
      botClass: 'alien',
    },
    {
      ...base,
      host: 'd.client.example.org',
      path: '/',
      peer: '192.0.2.4',
      fp: { a: 1 },
      bot: 1.5,
      botClass: ['human'],
    },
  ];
  const res = await cp.app.inject({
    method: 'POST',
    url: '/internal/request-logs',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-msgpack' },
    payload: pack({ node: 'n1', records }),
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().stored, 4);
  const row = async (host: string) =>
    (await cp.database.db.select().from(requestLogs).where(eq(requestLogs.host, host)))[0];
  const a = await row('a.client.example.org');
  assert.deepEqual([a.fingerprint, a.botScore, a.botClass], [FP, 99, 'human']);
  for (const h of ['b', 'c', 'd']) {
    const r = await row(`${h}.client.example.org`);
    assert.deepEqual([r.fingerprint, r.botScore, r.botClass], ['', 0, ''], h);
  }
});
