// Request and response schemas of the analytics routes.
import { Type } from '@sinclair/typebox';
import { MAX_QUERY_CHARS } from './sandbox.js';
import { LOG_COLUMNS } from './store.js';

export const QueryBody = Type.Object(
  {
    query: Type.String({
      minLength: 1,
      maxLength: MAX_QUERY_CHARS,
      description: 'One SELECT statement (DuckDB SQL) over the relation `logs`',
      examples: ['SELECT status, count(*) AS requests FROM logs GROUP BY status ORDER BY requests DESC'],
    }),
  },
  { additionalProperties: false, title: 'AnalyticsQuery' },
);

export const QueryAnswer = Type.Object(
  {
    columns: Type.Array(
      Type.Object({ name: Type.String(), type: Type.String({ description: 'DuckDB type of the column' }) }),
    ),
    rows: Type.Array(Type.Array(Type.Unknown()), {
      description:
        'One array per row, values in column order: numbers (integers beyond 2^53 as text), text, booleans, null, times as ISO 8601 text (UTC), lists and structs as arrays and objects',
    }),
    truncated: Type.Boolean({ description: 'true when the query had more rows than answered' }),
  },
  { title: 'AnalyticsQueryResult' },
);

/** The columns of `logs`, as a Markdown table for the operation's description. */
export const LOG_COLUMNS_TABLE = [
  '| column | type | meaning |',
  '|---|---|---|',
  ...LOG_COLUMNS.map(([name, type, meaning]) => `| ${name} | ${type} | ${meaning} |`),
].join('\n');
