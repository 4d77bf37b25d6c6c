// Request validation compilers: bodies are validated as sent (no type coercion: "3" is not 3), while path and query
// parameters, which are always text, are coerced to the schema's types.
import { AjvCompiler, type BuildCompilerFromPool, type RouteDefinition } from '@fastify/ajv-compiler';
import type { FastifyServerOptions } from 'fastify';
import { withoutNul } from './no-nul.js';

// Unknown fields are refused (400 `unknown field <name>`), not dropped: schemas are closed (additionalProperties: false).
// verbose: errors carry their schema, so a bound is reported with its other end (`ttl must be between 1 and 604800`).
// x-expected: what a pattern stands for, in words (OpenAPI extension keyword; see formatValidationError).
// Free-text strings refuse U+0000 (plugins/no-nul.ts).
const BASE = {
  useDefaults: true,
  removeAdditional: false,
  allErrors: false,
  verbose: true,
  keywords: ['x-expected'] as string[],
};

export function validationSchemaController(): NonNullable<FastifyServerOptions['schemaController']> {
  const factory = AjvCompiler();
  type Pool = Parameters<BuildCompilerFromPool>[0];
  const build = (externalSchemas: Pool, options?: { plugins?: [] }) => {
    const plugins = options?.plugins ?? [];
    const strict = factory(externalSchemas, { customOptions: { ...BASE, coerceTypes: false }, plugins });
    const coercing = factory(externalSchemas, { customOptions: { ...BASE, coerceTypes: 'array' }, plugins });
    return (routeSchema: RouteDefinition) =>
      (String(routeSchema.httpPart) === 'body' ? strict : coercing)({
        ...routeSchema,
        schema: withoutNul(routeSchema.schema),
      });
  };
  // The pool type is an overload (Ajv or JTD); this factory only ever builds Ajv validators.
  return { compilersFactory: { buildValidator: build as unknown as BuildCompilerFromPool } };
}
