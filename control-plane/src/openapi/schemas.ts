// Schemas shared by every route area: the error body, the Message object, and helpers for string enums.
import { Type, type TSchema, type TUnsafe } from '@sinclair/typebox';

/** Every error body: `{ "error": "<text>" }`; some errors add fields (e.g. `code`, `verified`). */
export const ErrorBody = Type.Object(
  { error: Type.String({ description: 'Human-readable description of what went wrong' }) },
  { additionalProperties: true, $id: undefined, title: 'Error' },
);

/** The Message object returned by deletions. */
export const MessageBody = Type.Object({ message: Type.String() }, { title: 'Message' });

/** A string enum as a plain JSON Schema `enum` (TypeBox unions of literals validate with unreadable anyOf errors). */
export function StringEnum<T extends string[]>(
  values: [...T],
  options: Record<string, unknown> = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: values, ...options });
}

/** The error responses a route can give, for its `response` schema: `{ ...errorResponses(400, 404) }`. 401 and 429 always. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const s of new Set([401, 429, ...statuses])) out[s] = ErrorBody;
  return out;
}

/** A nullable schema, emitted as OpenAPI 3.1 `type: [T, "null"]` friendly anyOf. */
export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}
