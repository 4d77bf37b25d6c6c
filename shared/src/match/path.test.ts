import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PathFilter, type PathMatchType } from './path.js';

const cases: { name: string; type: PathMatchType; inc: string[]; exc?: string[]; path: string; want: boolean }[] = [
  { name: 'default [/*] matches everything', type: 'wildcard', inc: [], path: '/any/thing', want: true },
  { name: 'default with regex type still matches everything', type: 'regex', inc: [], path: '/', want: true },
  { name: 'exact path', type: 'wildcard', inc: ['/login'], path: '/login', want: true },
  { name: 'exact path is whole-path', type: 'wildcard', inc: ['/login'], path: '/login/x', want: false },
  { name: 'prefix wildcard', type: 'wildcard', inc: ['/img/*'], path: '/img/a/b.png', want: true },
  { name: 'prefix wildcard needs the slash', type: 'wildcard', inc: ['/img/*'], path: '/img', want: false },
  { name: 'inner wildcard', type: 'wildcard', inc: ['/*.php'], path: '/a/b/index.php', want: true },
  { name: 'inner wildcard miss', type: 'wildcard', inc: ['/*.php'], path: '/index.html', want: false },
  { name: 'regex unanchored', type: 'regex', inc: ['\\.(jpg|png)$'], path: '/a/b.png', want: true },
  { name: 'regex miss', type: 'regex', inc: ['^/api/v[0-9]+/'], path: '/api/x/', want: false },
  { name: 'exclude beats include', type: 'wildcard', inc: ['/*'], exc: ['/admin/*'], path: '/admin/x', want: false },
  { name: 'exclude leaves others', type: 'wildcard', inc: ['/*'], exc: ['/admin/*'], path: '/public', want: true },
];
for (const c of cases) {
  test(`path: ${c.name}`, () => assert.equal(new PathFilter(c.type, c.inc, c.exc ?? []).matches(c.path), c.want));
}
