// Schemas shared by every route area: the error body, the Message object, and helpers for string enums.
import { Type, type TSchema, type TUnsafe } from '@sinclair/typebox';

/** Every error body: `{ "error": "<text>" }`; some errors add fields (e.g. `code`, `verified`). */
export const ErrorBody = Type.Object(
  { error: Type.String({ description: 'Human-readable description of what went wrong' }) },
  {
    additionalProperties: true,
    $id: undefined,
    title: 'Error',
    description: 'The error code (for example CP_ERR_RECORD_DUPLICATE) is in the X-Error-Code response header',
  },
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

/** Largest id the database holds (Postgres `integer`); a path or body id beyond it is 400, not a failed query. */
export const MAX_ID = 2_147_483_647;

/** A resource id: an integer from 1 to MAX_ID. */
export function Id(description?: string) {
  return Type.Integer({ minimum: 1, maximum: MAX_ID, ...(description ? { description } : {}) });
}

/**
 * A route's id segment, `:name` matching digits only: `/records/export` or `/rules/cache/reorder` is then never an
 * `{id}` route by another method (PUT /records/batch-update is 405, not `id must be integer`). The range is the
 * parameter schema's (Id): a longer number is 400.
 */
export function idSegment(name: string): string {
  return `:${name}(^\\d+$)`;
}

/** A nullable schema, emitted as OpenAPI 3.1 `type: [T, "null"]` friendly anyOf. */
export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}
