import { test } from 'node:test';
import assert from 'node:assert/strict';
import { srsForward, srsReverse } from './srs.js';

test('SRS0: forward then reverse gives the sender back; a forged hash, another secret or an old timestamp does not', () => {
  const now = Date.UTC(2026, 10, 26);
  const srs = srsForward('secret', 'Bob@Sender.example', 'routed.example', now);
  assert.match(srs, /^SRS0=[^=]{4}=[A-Z2-7]{2}=Sender\.example=Bob@routed\.example$/);
  assert.equal(srsReverse('secret', srs, now), 'Bob@Sender.example');
  assert.equal(srsReverse('other', srs, now), undefined);
  assert.equal(srsReverse('secret', srs.replace(/^SRS0=.{4}/, 'SRS0=AAAA'), now), undefined);
  assert.equal(srsReverse('secret', srs, now + 30 * 86_400_000), undefined);
  assert.equal(srsForward('secret', '', 'routed.example', now), '');
});
