// TypeBox schemas of import sessions, scans and the proxied re-check (also the OpenAPI document).
import { Type } from '@sinclair/typebox';
import { Id, Nullable, StringEnum } from '../../openapi/schemas.js';
import { ZoneText, ZoneUpload } from '../records/import-body.js';
import { LineError, PreviewRecord, Skipped } from '../records/schemas.js';
import { SESSION_STATUSES } from './store.js';

export const SessionParams = Type.Object({ domain: Type.String(), id: Id('Import session id') });

export const SessionStart = Type.Object(
  {
    source: Type.Optional(
      StringEnum(['zone', 'scan'], {
        description: '`zone` (default when `zone` is given): the zone file in `zone`; `scan`: scan the current DNS',
      }),
    ),
    zone: Type.Optional(
      Type.String({ minLength: 1, description: 'The zone as an RFC 1035 master file (source `zone`)' }),
    ),
  },
  { title: 'ImportSessionStart', additionalProperties: false },
);

/** JSON (a zone file or a scan), or the zone file as text/plain or a multipart file (as POST records/import). */
export const SessionStartBody = {
  content: {
    'application/json': { schema: SessionStart },
    'text/plain': { schema: ZoneText },
    'multipart/form-data': { schema: ZoneUpload },
  },
};

const Progress = Type.Object(
  {
    phase: StringEnum(['queued', 'nameservers', 'axfr', 'labels', 'planning', 'done']),
    method: Type.Optional(
      StringEnum(['axfr', 'labels'], { description: 'How the records were found: a zone transfer or the label list' }),
    ),
    nameservers: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String(),
          address: Type.Optional(Type.String()),
          result: Type.String({
            description: 'What the zone transfer from this address gave, or why it was not asked',
          }),
        }),
      ),
    ),
    labels_total: Type.Optional(Type.Integer()),
    labels_done: Type.Optional(Type.Integer()),
    found: Type.Optional(Type.Integer()),
  },
  { title: 'ImportScanProgress', description: 'A scan: what it has done so far (empty for a zone file)' },
);

const ResultItem = Type.Object({
  line: Type.Integer({ description: 'The line of the zone file, or the number of the scan find' }),
  name: Type.String(),
  type: Type.String(),
  destination: Type.String(),
  status: StringEnum(['created', 'skipped', 'failed', 'not_imported']),
  id: Type.Optional(Type.Integer({ description: 'The created record' })),
  reason: Type.Optional(Type.String({ description: 'Why a record was skipped' })),
  error: Type.Optional(Type.String({ description: 'Why a record could not be created' })),
});

export const CommitResult = Type.Object(
  {
    created: Type.Integer(),
    skipped: Type.Integer(),
    failed: Type.Integer(),
    results: Type.Array(ResultItem),
  },
  { title: 'ImportCommitResult' },
);

export const ImportSession = Type.Object(
  {
    id: Type.Integer(),
    domain: Type.String(),
    source: StringEnum(['zone', 'scan']),
    status: StringEnum([...SESSION_STATUSES], {
      description:
        'scanning → open → committed; a live (scanning or open) session may be discarded (deleted: `discarded` is the answer of the DELETE, GET is 404 afterwards) or superseded by a rescan; failed: the scan (or, for POST records/scan, its import) failed, `error` says why',
    }),
    auto_commit: Type.Boolean({ description: 'POST records/scan: committed as soon as the scan is through' }),
    progress: Progress,
    records: Type.Array(PreviewRecord, {
      description:
        'Records the commit would create (as planned); empty (with records_omitted) in the answer of the commit of a session of more than 10,000 records',
    }),
    records_omitted: Type.Optional(
      Type.Boolean({
        description:
          'true: the answer of a commit of more than 10,000 records does not list the planned records (GET of the session does)',
      }),
    ),
    skipped: Type.Array(Skipped, {
      description: 'SOA and apex NS (managed by the platform) and records identical to existing ones',
    }),
    errors: Type.Array(LineError, {
      description: 'Lines or finds that cannot be imported; the commit leaves them out',
    }),
    limit_error: Nullable(Type.String({ description: "The commit would exceed the plan's max_records" })),
    result: Nullable(CommitResult),
    error: Nullable(Type.String()),
    superseded_by: Nullable(Type.Integer()),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    closed_at: Nullable(Type.String({ format: 'date-time' })),
  },
  { title: 'ImportSession' },
);

export const CommitFailure = Type.Object(
  {
    error: Type.String(),
    results: Type.Optional(Type.Array(ResultItem)),
  },
  { title: 'ImportCommitError', additionalProperties: true },
);

export const RecheckResult = Type.Object(
  {
    ok: Type.Boolean({ description: 'Every proxied record resolves to the service' }),
    checked: Type.Integer(),
    expected: Type.Object({ ipv4: Type.Array(Type.String()), ipv6: Type.Array(Type.String()) }),
    records: Type.Array(
      Type.Object({
        id: Type.Integer(),
        name: Type.String(),
        hostname: Type.String(),
        ok: Type.Boolean(),
        seen: Type.Array(Type.String(), { description: 'Addresses the public resolvers answer for the hostname' }),
        error: Type.Optional(Type.String()),
      }),
    ),
  },
  { title: 'ProxiedRecheckResult' },
);
