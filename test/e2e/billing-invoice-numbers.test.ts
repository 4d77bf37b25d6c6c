// Invoice numbers are sequential per Jalali year (issue 16 item 3): across Nowruz the sequence starts again at 1,
// concurrent invoices never share or skip a number, and a rolled-back invoice gives its number back. Run with
// TEST_DATABASE_URL for real concurrency on Postgres (PGlite runs one transaction at a time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { executeCommand } from '../../control-plane/src/admin/commands.js';
import { issueInvoice } from '../../control-plane/src/areas/billing/invoices.js';

test('invoice numbers: sequential per Jalali year across Nowruz 1405, safe under concurrency', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user('numbers@example.org');
  const admin = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await executeCommand(
      { db: cp.database.db, configLog: cp.app.configLog, out: (l) => out.push(l), billing: cp.config.billing },
      argv,
      (l) => err.push(l),
    );
    assert.equal(code, 0, err.join('\n'));
    return /invoice (\S+) \(id/.exec(out[0])![1];
  };
  const at = (iso: string) => admin('invoice', 'create', owner.email, '--item', 'Support|1|1000', '--issued-at', iso);

  await t.test('the year turns at 00:00 Iran time on 1 Farvardin (2026-03-20T20:30:00Z)', async () => {
    assert.equal(await at('2026-03-20T20:29:58Z'), '1404-000001');
    assert.equal(await at('2026-03-20T20:29:59.999Z'), '1404-000002');
    assert.equal(await at('2026-03-20T20:30:00Z'), '1405-000001');
    assert.equal(await at('2026-03-21T08:00:00Z'), '1405-000002');
    // An invoice dated in the old year (issued late by support) continues that year's sequence.
    assert.equal(await at('2026-03-19T12:00:00Z'), '1404-000003');
    assert.equal(await at('2027-03-20T20:30:00Z'), '1406-000001');
    const res = await cp.call(owner.key, 'GET', '/invoices?per_page=100');
    const numbers = res.json().invoices.map((i: { number: string; issued_at: string }) => [i.issued_at, i.number]);
    assert.deepEqual(numbers, [
      ['2027-03-20T20:30:00.000Z', '1406-000001'],
      ['2026-03-21T08:00:00.000Z', '1405-000002'],
      ['2026-03-20T20:30:00.000Z', '1405-000001'],
      ['2026-03-20T20:29:59.999Z', '1404-000002'],
      ['2026-03-20T20:29:58.000Z', '1404-000001'],
      ['2026-03-19T12:00:00.000Z', '1404-000003'],
    ]);
  });

  await t.test('concurrent invoices draw distinct numbers with no gap; a rollback gives its number back', async () => {
    const issuedAt = new Date('2028-01-01T00:00:00Z'); // 1406-10-11
    const issue = () =>
      cp.database.db.transaction((tx) =>
        issueInvoice(
          tx,
          {
            userId: owner.id,
            kind: 'manual',
            status: 'paid',
            items: [{ description: 'x', quantity: 1, unitPriceRials: 1 }],
            issuedAt,
          },
          10,
        ),
      );
    await assert.rejects(
      cp.database.db.transaction(async (tx) => {
        await issueInvoice(
          tx,
          {
            userId: owner.id,
            kind: 'manual',
            status: 'paid',
            items: [{ description: 'x', quantity: 1, unitPriceRials: 1 }],
            issuedAt,
          },
          10,
        );
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    const rows = await Promise.all(Array.from({ length: 25 }, issue));
    const sequences = rows.map((r) => r.sequence).sort((a, b) => a - b);
    assert.deepEqual(
      sequences,
      Array.from({ length: 25 }, (_, i) => i + 2),
      '1406-000001 was drawn before; 2..26 now',
    );
    assert.equal(new Set(rows.map((r) => r.number)).size, 25);
  });
});
