import { test } from 'node:test';
import assert from 'node:assert/strict';
import { invoiceNumber, jalaliYear } from './jalali.js';

// Nowruz 1405 is 21 March 2026 (1 Farvardin), which begins at 2026-03-20T20:30:00Z on Iran's clock.
const cases = [
  { at: '2026-03-20T20:29:59.999Z', year: 1404 },
  { at: '2026-03-20T20:30:00.000Z', year: 1405 },
  { at: '2025-03-20T20:29:59Z', year: 1403 }, // 1403 is a leap year: Nowruz 1404 was 21 March 2025
  { at: '2025-03-20T20:30:00Z', year: 1404 },
  { at: '2026-11-26T02:00:00Z', year: 1405 },
  { at: '2027-03-20T20:29:59Z', year: 1405 },
  { at: '2027-03-20T20:30:00Z', year: 1406 },
];
for (const c of cases) test(`jalaliYear(${c.at}) = ${c.year}`, () => assert.equal(jalaliYear(new Date(c.at)), c.year));

test('invoiceNumber pads the sequence to six digits', () => {
  assert.equal(invoiceNumber(1405, 1), '1405-000001');
  assert.equal(invoiceNumber(1405, 1234567), '1405-1234567');
});
