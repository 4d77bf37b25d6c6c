// Request and response schemas of the recommendations (also the OpenAPI document).
import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../../openapi/schemas.js';
import { CHECK_IDS } from './checks.js';
import { DOMAINS_PER_PAGE_MAX } from './service.js';

const Fields = {
  id: StringEnum([...CHECK_IDS]),
  title: Type.String(),
  description: Type.String(),
  severity: StringEnum(['high', 'medium', 'low']),
  status: StringEnum(['outstanding', 'dismissed', 'passed', 'not_applicable', 'unavailable'], {
    description:
      '`outstanding`: to do; `dismissed`: to do but dismissed (not counted); `passed`; `not_applicable` (e.g. no ' +
      'proxied records, external DNS); `unavailable`: the platform cannot judge or offer it (`reason` says why)',
  }),
  details: Type.Record(Type.String(), Type.Unknown(), { description: 'What was found (outstanding checks)' }),
  reason: Nullable(Type.String({ description: 'Why the check is not applicable or unavailable' })),
  fix: Nullable(
    Type.Object(
      { description: Type.String(), permission: Type.String({ description: 'The permission the fix needs' }) },
      { description: 'The one-click fix (POST …/fix), where one is safe' },
    ),
  ),
  fixable: Type.Boolean({ description: 'A fix exists and the check is outstanding (or dismissed)' }),
  dismissed_at: Nullable(Type.String({ format: 'date-time' })),
};

export const Recommendation = Type.Object(Fields, { title: 'Recommendation' });

export const Checklist = Type.Object(
  {
    domain: Type.String(),
    outstanding: Type.Integer({ description: 'Checks outstanding (dismissed ones not counted)' }),
    recommendations: Type.Array(Recommendation),
  },
  { title: 'RecommendationChecklist' },
);

export const OutstandingQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: DOMAINS_PER_PAGE_MAX,
        default: 20,
        description: 'Domains looked at per page (by name)',
      }),
    ),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, description: 'The `next_cursor` of the previous page' }),
    ),
  },
  { additionalProperties: false },
);

export const OutstandingList = Type.Object(
  {
    recommendations: Type.Array(Type.Object({ domain: Type.String(), ...Fields }, { title: 'DomainRecommendation' })),
    next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next domains' })),
  },
  { title: 'OutstandingRecommendations' },
);

export const OutstandingCount = Type.Object(
  {
    outstanding: Type.Integer(),
    by_severity: Type.Object({ high: Type.Integer(), medium: Type.Integer(), low: Type.Integer() }),
    domains: Type.Integer({ description: 'Domains with at least one outstanding recommendation' }),
    domains_checked: Type.Integer(),
    complete: Type.Boolean({ description: 'false: the account has more domains than one count looks at (1,000)' }),
  },
  { title: 'RecommendationCount' },
);
