import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostFilter, type HostMatchType } from './host.js';

const cases: { name: string; type: HostMatchType; inc: string[]; exc?: string[]; host: string; want: boolean }[] = [
  { name: 'no filter matches all', type: '', inc: [], host: 'anything.example.org', want: true },
  { name: 'exact hit', type: 'exact', inc: ['www.example.org'], host: 'www.example.org', want: true },
  { name: 'exact miss', type: 'exact', inc: ['www.example.org'], host: 'api.example.org', want: false },
  {
    name: 'exact is case-insensitive via normalisation',
    type: 'exact',
    inc: ['WWW.Example.org.'],
    host: 'www.example.org',
    want: true,
  },
  { name: 'wildcard matches a subdomain', type: 'wildcard', inc: ['*.example.org'], host: 'a.example.org', want: true },
  {
    name: 'wildcard matches deeper subdomain',
    type: 'wildcard',
    inc: ['*.example.org'],
    host: 'a.b.example.org',
    want: true,
  },
  {
    name: 'wildcard does not match the apex',
    type: 'wildcard',
    inc: ['*.example.org'],
    host: 'example.org',
    want: false,
  },
  {
    name: 'wildcard does not match a lookalike',
    type: 'wildcard',
    inc: ['*.example.org'],
    host: 'badexample.org',
    want: false,
  },
  {
    name: 'wildcard entry without * is exact',
    type: 'wildcard',
    inc: ['example.org'],
    host: 'example.org',
    want: true,
  },
  { name: 'inner wildcard', type: 'wildcard', inc: ['api-*.example.org'], host: 'api-v2.example.org', want: true },
  {
    name: 'inner wildcard needs one char',
    type: 'wildcard',
    inc: ['api-*.example.org'],
    host: 'api-.example.org',
    want: false,
  },
  { name: 'regex', type: 'regex', inc: ['^(www|api)\\.example\\.org$'], host: 'api.example.org', want: true },
  { name: 'regex miss', type: 'regex', inc: ['^(www|api)\\.example\\.org$'], host: 'cdn.example.org', want: false },
  {
    name: 'exclude beats include',
    type: 'wildcard',
    inc: ['*.example.org'],
    exc: ['admin.example.org'],
    host: 'admin.example.org',
    want: false,
  },
  {
    name: 'exclude only: others pass',
    type: 'wildcard',
    inc: [],
    exc: ['admin.example.org'],
    host: 'www.example.org',
    want: true,
  },
  {
    name: 'exclude wildcard beats exact include',
    type: 'wildcard',
    inc: ['a.x.example.org'],
    exc: ['*.x.example.org'],
    host: 'a.x.example.org',
    want: false,
  },
];
for (const c of cases) {
  test(`host: ${c.name}`, () => assert.equal(new HostFilter(c.type, c.inc, c.exc ?? []).matches(c.host), c.want));
}
