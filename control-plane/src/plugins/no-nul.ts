// No request string may hold the NUL character (U+0000): Postgres stores neither it in `text` nor `\u0000` in
// `jsonb`, so such a string would fail its write with a 500. Every free-text string of a request schema (one
// without an enum, a const, a format or a pattern of its own) gets a pattern saying so; the route's validation
// answers 400 `<field> must be text without the NUL character (U+0000)`, and the OpenAPI document shows the
// pattern. Applied to each route's copy of its schemas, for validation (plugins/validation.ts) and for the
// document (openapi/index.ts) alike. Patterns written by hand exclude U+0000 themselves.

export const NO_NUL_PATTERN = '^[^\\u0000]*$';
export const NO_NUL_EXPECTED = 'text without the NUL character (U+0000)';

const FREE_TEXT_EXEMPT = ['enum', 'const', 'format', 'pattern'];

/** A copy of `schema` in which every free-text string excludes U+0000; everything else is kept as it is. */
export function withoutNul<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(withoutNul) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  const source = schema as Record<string | symbol, unknown>;
  const out: Record<string | symbol, unknown> = {};
  for (const key of Reflect.ownKeys(source)) {
    const value = source[key];
    // `enum`, `const`, `default` and `examples` are values, not schemas.
    out[key] = key === 'enum' || key === 'const' || key === 'default' || key === 'examples' ? value : withoutNul(value);
  }
  const types = [source.type].flat();
  if (types.includes('string') && !FREE_TEXT_EXEMPT.some((k) => k in source)) {
    out.pattern = NO_NUL_PATTERN;
    out['x-expected'] = NO_NUL_EXPECTED;
  }
  return out as T;
}
