// TypeBox schemas of the DNS record routes: Record, RecordCreate, RecordUpdate, batch-update, delete-many,
// the bulk result, and the BIND import preview and result.
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { Id, StringEnum } from '../../openapi/schemas.js';
import { LIMITS, RECORD_TYPES } from './types.js';

/** A record type as accepted: one of RECORD_TYPES in any letter case, surrounding blanks ignored. */
const TYPE_PATTERN = `^\\s*(?:${RECORD_TYPES.map((t) => [...t].map((c) => `[${c}${c.toLowerCase()}]`).join('')).join('|')})\\s*$`;
const closed = { additionalProperties: false } as const;

const T = {
  name: Type.String({
    maxLength: 1024,
    description:
      'Relative to the zone ("www", "*.dev"), "@" for the apex, or a name inside the zone with or without the trailing dot; stored lower case, IDN as punycode',
  }),
  type: Type.String({
    description: `One of ${RECORD_TYPES.join(', ')} (case-insensitive)`,
    pattern: TYPE_PATTERN,
    'x-expected': `one of ${RECORD_TYPES.join(', ')}`,
  }),
  destination: Type.String({
    maxLength: 8192,
    description:
      'A: IPv4; AAAA: IPv6 (stored canonical); CNAME, NS, PTR, MX: host name; TXT: the text (or quoted strings, joined); SRV: "weight port target" (priority in mx_priority); CAA: "flags tag value" with tag issue, issuewild or iodef',
  }),
  mx_priority: Type.Integer({
    minimum: 0,
    maximum: LIMITS.priorityMax,
    description: `MX preference or SRV priority, 0 to ${LIMITS.priorityMax}, default ${LIMITS.priorityDefault}; ignored for other types`,
  }),
  ttl: Type.Integer({
    minimum: LIMITS.ttlMin,
    maximum: LIMITS.ttlMax,
    description: `Seconds, ${LIMITS.ttlMin} to ${LIMITS.ttlMax}, default ${LIMITS.ttlDefault}; forced to ${LIMITS.proxiedTtl} while proxied`,
  }),
  proxied: Type.Boolean({
    description: 'Answer with edge addresses and route traffic through the edge (A, AAAA, CNAME only)',
  }),
  captcha: Type.Boolean({ description: 'Challenge visitors before passing them to the origin' }),
  scheme: Type.String({
    maxLength: 64,
    description:
      'Http, Https, Auto or Default (case-insensitive); Default, empty or unrecognised values are stored as Auto with port 443',
  }),
  port: Type.Integer({
    description: 'Origin port: Https 443 and Http 80 when unset or outside 1-65535; Auto always 443',
  }),
  host_header: Type.String({
    maxLength: 1024,
    description:
      'Host header override (a host name); an empty string removes it. Needs the plan feature host_header_edit_enabled',
  }),
  host_header_mode: StringEnum(['own', 'target']),
  monitor: Type.Boolean({ description: 'Include in uptime monitoring' }),
  timeout: Type.Integer({
    minimum: LIMITS.timeoutMin,
    maximum: LIMITS.timeoutMax,
    description: `Seconds the edge waits for the origin before answering 504, ${LIMITS.timeoutMin} to ${LIMITS.timeoutMax}, default ${LIMITS.timeoutDefault}`,
  }),
  comment: Type.String({
    maxLength: LIMITS.commentMax,
    description: `Free note, at most ${LIMITS.commentMax} characters; an empty string removes it`,
  }),
};

const optionalFields = {
  mx_priority: Type.Optional(T.mx_priority),
  ttl: Type.Optional(T.ttl),
  proxied: Type.Optional(T.proxied),
  captcha: Type.Optional(T.captcha),
  scheme: Type.Optional(T.scheme),
  port: Type.Optional(T.port),
  host_header: Type.Optional(T.host_header),
  host_header_mode: Type.Optional(T.host_header_mode),
  monitor: Type.Optional(T.monitor),
  timeout: Type.Optional(T.timeout),
  comment: Type.Optional(T.comment),
};

export const RecordCreate = Type.Object(
  {
    name: T.name,
    type: T.type,
    destination: T.destination,
    ...optionalFields,
  },
  { title: 'RecordCreate', examples: [{ name: 'www', type: 'A', destination: '192.0.2.10', ttl: 300 }], ...closed },
);

const updateFields = { name: Type.Optional(T.name), destination: Type.Optional(T.destination), ...optionalFields };

export const RecordUpdate = Type.Object(
  {
    ...updateFields,
    type: Type.Optional(
      Type.String({
        description: "Accepted only when equal to the record's type: the type of a record cannot change",
        pattern: TYPE_PATTERN,
        'x-expected': `one of ${RECORD_TYPES.join(', ')}`,
      }),
    ),
  },
  { title: 'RecordUpdate', description: 'Omitted fields are unchanged', ...closed },
);

export const Record = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String({ description: 'Relative, lower case, "@" for the apex' }),
    type: StringEnum([...RECORD_TYPES]),
    destination: Type.String(),
    mx_priority: Type.Optional(Type.Integer({ description: 'MX and SRV only' })),
    ttl: Type.Integer(),
    proxied: Type.Boolean(),
    captcha: Type.Boolean(),
    scheme: StringEnum(['Http', 'Https', 'Auto']),
    port: Type.Integer(),
    host_header: Type.Optional(Type.String({ description: 'Absent when there is no override' })),
    host_header_mode: StringEnum(['own', 'target']),
    monitor: Type.Boolean(),
    timeout: Type.Integer(),
    comment: Type.Optional(Type.String({ description: 'Absent when there is no comment' })),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'DnsRecord' },
);
export type RecordBody = Static<typeof Record>;

export const RecordParams = Type.Object({ domain: Type.String(), id: Id('Record id') });
export const DomainParams = Type.Object({
  domain: Type.String({ description: 'Domain name (percent-encoded when needed)' }),
});

/** Records in one page of GET records/?limit= (and the chunk of the streamed full list). */
export const RECORDS_PAGE = { default: 1000, max: 10_000 } as const;

/** GET records/: no parameter answers every record (the spec's default); `limit` or `cursor` answers one page. */
export const RecordListQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: RECORDS_PAGE.max,
      description: `Answer one page of at most this many records (default ${RECORDS_PAGE.default} when only \`cursor\` is given)`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,10}$',
      description: 'The `X-Next-Cursor` header of the previous page: the page after it',
    }),
  ),
});

/**
 * The fields without their value bounds: a batch item out of range is that item's failure in the bulk result (spec:
 * batch operations answer 200 with per-item results), not a 400 for the whole batch.
 */
function unbounded(fields: TProperties): TProperties {
  const strip = ['minimum', 'maximum', 'maxLength', 'pattern', 'enum'];
  return Object.fromEntries(
    Object.entries(fields).map(([k, v]) => {
      const copy: Record<string | symbol, unknown> = { ...v };
      for (const key of strip) delete copy[key];
      if (Array.isArray(v.enum)) copy.type = 'string';
      return [k, copy as unknown as TSchema];
    }),
  );
}

export const BatchUpdate = Type.Object(
  {
    updates: Type.Array(Type.Object({ id: Id(), ...unbounded(updateFields) }, closed), {
      minItems: 1,
      maxItems: LIMITS.batchMax,
      description: `1 to ${LIMITS.batchMax} updates, each applied as a single PUT would be`,
    }),
  },
  { title: 'RecordBatchUpdate', ...closed },
);

export const DeleteMany = Type.Object(
  {
    ids: Type.Array(Id(), {
      minItems: 1,
      maxItems: LIMITS.batchMax,
      description: `1 to ${LIMITS.batchMax} record ids`,
    }),
  },
  { title: 'RecordDeleteMany', ...closed },
);

export const BulkResult = Type.Object(
  {
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    results: Type.Array(
      Type.Object({
        id: Type.Integer(),
        ok: Type.Boolean(),
        error: Type.Optional(Type.String({ description: 'Present only when ok is false' })),
      }),
    ),
  },
  { title: 'BulkResult' },
);

export const ZoneImport = Type.Object(
  {
    zone: Type.String({
      minLength: 1,
      description: 'The zone as an RFC 1035 master file ($ORIGIN, $TTL, parentheses, relative names)',
    }),
  },
  { title: 'ZoneImport', ...closed },
);

export const LineError = Type.Object({
  line: Type.Integer({ description: '0 for the file as a whole' }),
  error: Type.String(),
});
export const Skipped = Type.Object({ line: Type.Integer(), reason: Type.String() });
export const PreviewRecord = Type.Object({
  line: Type.Integer(),
  name: Type.String(),
  type: StringEnum([...RECORD_TYPES]),
  destination: Type.String(),
  mx_priority: Type.Optional(Type.Integer()),
  ttl: Type.Integer(),
  proxied: Type.Boolean(),
  captcha: Type.Boolean(),
  scheme: StringEnum(['Http', 'Https', 'Auto']),
  port: Type.Integer(),
  host_header: Type.Optional(Type.String()),
  host_header_mode: StringEnum(['own', 'target']),
  monitor: Type.Boolean(),
  timeout: Type.Integer(),
  comment: Type.Optional(Type.String()),
});

export const ImportPreview = Type.Object(
  {
    records: Type.Array(PreviewRecord, { description: 'Records the import would create' }),
    skipped: Type.Array(Skipped, {
      description: 'SOA and apex NS (managed by the platform) and records identical to existing ones',
    }),
    errors: Type.Array(LineError, {
      description: 'Lines that would make the import fail; empty when it would succeed',
    }),
    limit_error: Type.Optional(
      Type.String({ description: "Present when the import would exceed the plan's max_records" }),
    ),
  },
  { title: 'ZoneImportPreview' },
);

export const ImportResult = Type.Object(
  {
    created: Type.Integer(),
    records: Type.Array(Record, {
      description: 'The created records; empty (with records_omitted) when more than 10,000 were created',
    }),
    records_omitted: Type.Optional(
      Type.Boolean({ description: 'true: more than 10,000 records were created and `records` does not list them' }),
    ),
    skipped: Type.Array(Skipped),
  },
  { title: 'ZoneImportResult' },
);

export const ImportFailure = Type.Object(
  {
    error: Type.String(),
    errors: Type.Optional(Type.Array(LineError)),
  },
  { title: 'ZoneImportError' },
);
