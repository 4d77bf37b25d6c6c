// ZoneTable.find: the most specific served apex that is a suffix of the query name, with zones of several label
// counts nested inside each other, replaced and deleted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileZone } from './compile.js';
import { ZoneTable } from './table.js';
import { ParsedQuery, parseQuery, PARSE } from '../wire/query.js';
import { buildQuery, sampleSnapshot } from '../testing/fixtures.js';

const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: [] };
const zone = (apex: string) => compileZone(sampleSnapshot({}, apex), EDGE).zone!;

function find(table: ZoneTable, name: string): string | undefined {
  const q = new ParsedQuery();
  const msg = buildQuery(name, 1);
  assert.equal(parseQuery(msg, msg.length, q), PARSE.OK);
  const z = table.find(q.key, q.labelStarts, q.labelCount);
  if (z !== undefined) assert.equal(q.key.substring(table.apexOffset), z.apex, 'apexOffset points at the apex');
  return z?.apex;
}

test('the longest served suffix wins, whatever the label counts; replaced and deleted zones are followed', () => {
  const table = new ZoneTable();
  for (const apex of ['example.org', 'sub.example.org', 'x.y.deep.example.org', 'org2']) table.set(zone(apex));
  assert.equal(find(table, 'www.example.org'), 'example.org');
  assert.equal(find(table, 'EXAMPLE.org'), 'example.org');
  assert.equal(find(table, 'a.b.c.sub.example.org'), 'sub.example.org');
  assert.equal(find(table, 'sub.example.org'), 'sub.example.org');
  assert.equal(find(table, 'y.deep.example.org'), 'example.org');
  assert.equal(find(table, 'w.x.y.deep.example.org'), 'x.y.deep.example.org');
  assert.equal(find(table, 'a.org2'), 'org2');
  assert.equal(find(table, 'example.com'), undefined);
  assert.equal(find(table, 'org'), undefined);

  table.set(zone('sub.example.org')); // replaced: still one zone with three labels
  table.delete('sub.example.org');
  assert.equal(find(table, 'a.sub.example.org'), 'example.org');
  table.delete('sub.example.org'); // a second delete changes nothing
  table.delete('x.y.deep.example.org');
  assert.equal(find(table, 'w.x.y.deep.example.org'), 'example.org');
  table.set(zone('x.y.deep.example.org'));
  assert.equal(find(table, 'w.x.y.deep.example.org'), 'x.y.deep.example.org');
  table.delete('example.org');
  assert.equal(find(table, 'www.example.org'), undefined);
  assert.equal(table.size, 2);
});
