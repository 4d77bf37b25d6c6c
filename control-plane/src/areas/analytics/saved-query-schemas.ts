// Request and response schemas of the saved analytics queries (saved-query-routes.ts), also the OpenAPI document.
import { Type } from '@sinclair/typebox';
import { Id, Nullable, StringEnum } from '../../openapi/schemas.js';
import { MAX_QUERY_CHARS } from './sandbox.js';
import { ALERT_OPS, ALERT_STATES } from './saved-queries-store.js';

/** Longest saved query name (as a rule's or a monitor's name, spec Limits). */
export const MAX_SAVED_QUERY_NAME = 64;
/** Saved queries one account may have. */
export const MAX_SAVED_QUERIES = 50;
/** Longest evaluation interval of an alert (one day); the shortest is ANALYTICS_ALERT_MIN_INTERVAL_SECONDS (60). */
export const MAX_ALERT_INTERVAL_SECONDS = 86_400;
/** Longest column name an alert may name. */
const MAX_COLUMN_CHARS = 255;

const Timestamp = Type.String({ format: 'date-time' });

const Name = Type.String({
  minLength: 1,
  maxLength: MAX_SAVED_QUERY_NAME,
  description: `A label, 1 to ${MAX_SAVED_QUERY_NAME} characters (not blank); used in alerts`,
  examples: ['5xx in the last 5 minutes'],
});

const Query = Type.String({
  minLength: 1,
  maxLength: MAX_QUERY_CHARS,
  description:
    'One SELECT statement (DuckDB SQL) over the relation `logs`, checked when saved exactly as POST /analytics/query checks it',
  examples: ["SELECT count(*) AS errors FROM logs WHERE status >= 500 AND time > now() - INTERVAL '5 minutes'"],
});

export const AlertBody = Type.Object(
  {
    column: Type.String({
      minLength: 1,
      maxLength: MAX_COLUMN_CHARS,
      description: "A numeric column of the query's answer; its value in the first row is compared",
      examples: ['errors'],
    }),
    op: StringEnum([...ALERT_OPS], { description: 'How the value is compared with `value`' }),
    value: Type.Number({ description: 'The threshold', examples: [100] }),
    interval_seconds: Type.Integer({
      minimum: 1,
      maximum: MAX_ALERT_INTERVAL_SECONDS,
      description: `How often the query runs, ANALYTICS_ALERT_MIN_INTERVAL_SECONDS (60 by default) to ${MAX_ALERT_INTERVAL_SECONDS} seconds; shorter is 400`,
      examples: [300],
    }),
    notify_feed: Type.Optional(
      Type.Boolean({
        description: "Notify the account's notification feed (category `analytics`); true when omitted",
      }),
    ),
    webhook_domain: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 253,
          description:
            'A domain of yours (domain.settings) whose uptime webhook (webhook_url and signing secret, PUT /uptime/settings) receives the signed event `analytics.alert`; null or omitted for none',
        }),
      ),
    ),
  },
  {
    additionalProperties: false,
    title: 'SavedQueryAlert',
    description:
      'Fires when the comparison holds at an evaluation and did not at the one before: once per crossing, not at every evaluation while it holds. At least one target (notify_feed true, or a webhook_domain)',
  },
);

export const SavedQueryCreate = Type.Object(
  {
    name: Name,
    query: Query,
    alert: Type.Optional(Nullable(AlertBody)),
  },
  { additionalProperties: false, title: 'SavedQueryCreate' },
);

export const SavedQueryUpdate = Type.Object(
  {
    name: Type.Optional(Name),
    query: Type.Optional(Query),
    alert: Type.Optional(Nullable(AlertBody)),
  },
  {
    additionalProperties: false,
    title: 'SavedQueryUpdate',
    description:
      'Omitted fields are kept; `alert` replaces the alert as a whole (null removes it). A changed query or alert is checked again and starts its alert afresh (state `unknown`)',
  },
);

const AlertView = Type.Object(
  {
    column: Type.String(),
    op: StringEnum([...ALERT_OPS]),
    value: Type.Number(),
    interval_seconds: Type.Integer(),
    notify_feed: Type.Boolean(),
    webhook_domain: Nullable(
      Type.String({ description: 'null also when that domain was deleted (each later firing records the error)' }),
    ),
  },
  { title: 'SavedQueryAlertView' },
);

const Evaluation = Type.Object(
  {
    state: StringEnum([...ALERT_STATES], {
      description: 'unknown: not evaluated since the alert was set; ok: the comparison did not hold; firing: it held',
    }),
    last_evaluated_at: Nullable(Timestamp),
    last_value: Nullable(
      Type.Number({ description: 'The column in the first row at the last evaluation (null: no row, or null)' }),
    ),
    last_error: Nullable(
      Type.String({ description: 'Why the last evaluation or notification failed (null: it did not)' }),
    ),
    last_fired_at: Nullable(Timestamp),
    fired_count: Type.Integer({ description: 'Crossings notified since the alert was set' }),
    next_evaluation_at: Nullable(Timestamp),
  },
  { title: 'SavedQueryEvaluation' },
);

export const SavedQuery = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    query: Type.String(),
    alert: Nullable(AlertView),
    evaluation: Nullable(Evaluation),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'SavedQuery' },
);

export const SavedQueryList = Type.Object(
  {
    saved_queries: Type.Array(SavedQuery),
    max_saved_queries: Type.Integer({ description: 'The most saved queries an account may have' }),
  },
  { title: 'SavedQueryList' },
);

export const SavedQueryParams = Type.Object({ savedQueryId: Id() });
