// The table of a zone's nodes agrees with a Map given the same sets and deletes (growth, reserve and backward-shift
// deletion included), by name bytes and by string, and the parser's suffix hashes are nameHash of each suffix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '@platform/shared/testing/prng';
import { buildQuery } from '../testing/fixtures.js';
import { keyBytes, ParsedQuery, parseQuery, PARSE } from '../wire/query.js';
import { nameHash, NodeMap } from './name-index.js';
import type { ZoneNode } from './model.js';

const node = (name: string): ZoneNode => ({ name, rrsets: new Map(), cut: '', slots: [] });

test('NodeMap: by bytes and by string it holds exactly what a Map holds, through sets, replacements and deletes', () => {
  const rand = prng(3);
  const nodes = new NodeMap();
  const want = new Map<string, ZoneNode>();
  const names = Array.from({ length: 3000 }, (_, i) => `n${Math.floor(rand() * 1e6)}-${i % 40}.example.org`);
  const bytes = Buffer.alloc(300);
  const find = (name: string) => {
    const n = bytes.write(name, 'latin1');
    return nodes.index.find(bytes, 0, n, nameHash(name));
  };
  const same = (step: number) => {
    for (const n of names) {
      assert.equal(find(n), want.get(n), `step ${step}: ${n}`);
      assert.equal(nodes.get(n), want.get(n), `step ${step}: ${n}`);
      assert.equal(nodes.has(n), want.has(n), `step ${step}: ${n}`);
    }
    assert.equal(nodes.size, want.size);
    assert.deepEqual([...nodes.keys()].sort(), [...want.keys()].sort());
    for (const [name, n] of nodes) assert.equal(n, want.get(name));
  };
  for (let step = 0; step < 20000; step++) {
    const name = names[Math.floor(rand() * names.length)];
    if (step === 7000) nodes.reserve(5000);
    if (rand() < 0.6) {
      const n = node(name);
      nodes.set(name, n);
      want.set(name, n);
    } else assert.equal(nodes.delete(name), want.delete(name));
    if (step % 500 === 0) same(step);
  }
  same(20000);
  assert.equal(find('nothere.example.org'), undefined);
  assert.equal(nodes.get('nothere.example.org'), undefined);
  nodes.clear();
  for (const n of names) assert.equal(find(n), undefined);
  assert.equal(nodes.size, 0);
});

test('the parser hashes every suffix of the name as nameHash does, the key made only when asked for', () => {
  const q = new ParsedQuery();
  for (const name of ['www.Example.ORG', 'a.b.c.d.example.org', 'example.org', 'x']) {
    const msg = buildQuery(name, 1);
    assert.equal(parseQuery(msg, msg.length, q), PARSE.OK);
    const key = name.toLowerCase();
    assert.equal(keyBytes.toString('latin1', 0, q.keyLength), key);
    for (let i = 0; i < q.labelCount; i++)
      assert.equal(q.suffixHashes[i], nameHash(key.substring(q.labelStarts[i])), `${name} from label ${i}`);
    assert.equal(q.key, key);
  }
});
