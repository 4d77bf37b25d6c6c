// TypeBox schemas of the email routing routes (also the OpenAPI document).
import { Type } from '@sinclair/typebox';
import { Id, Nullable, StringEnum } from '../../openapi/schemas.js';
import { MAX_ADDRESS } from './addresses.js';
import { MAX_SEND_TEXT } from './service.js';

const Address = (description: string) => Type.String({ minLength: 1, maxLength: MAX_ADDRESS, description });

export const ManagedRecord = Type.Object(
  {
    name: Type.String(),
    type: StringEnum(['MX', 'TXT']),
    destination: Type.String(),
    mx_priority: Type.Optional(Type.Integer()),
  },
  { title: 'EmailManagedRecord' },
);

export const RoutingStatus = Type.Object(
  {
    enabled: Type.Boolean(),
    records_locked: Type.Boolean({ description: 'Locked managed records cannot be changed through the records API' }),
    dkim_selector: Nullable(Type.String()),
    settings: Type.Optional(Type.Object({ dmarc_policy: StringEnum(['honor', 'ignore']) })),
    last_check: Nullable(Type.Unknown()),
    records: Type.Array(ManagedRecord, { description: 'The records email routing publishes (managed zones)' }),
    suggested_records: Type.Array(ManagedRecord, { description: 'Records suggested, not published (DMARC)' }),
  },
  { title: 'EmailRoutingStatus' },
);

export const RoutingState = Type.Object(
  {
    enabled: Type.Boolean(),
    records_locked: Type.Boolean(),
    dkim_selector: Nullable(Type.String()),
    settings: Type.Object({ dmarc_policy: StringEnum(['honor', 'ignore']) }),
    last_check: Nullable(Type.Unknown()),
  },
  { title: 'EmailRoutingState' },
);

export const CheckResult = Type.Object(
  {
    ok: Type.Boolean(),
    checked_at: Type.String({ format: 'date-time' }),
    records: Type.Array(
      Type.Object({ ...ManagedRecord.properties, ok: Type.Boolean(), found: Type.Array(Type.String()) }),
    ),
  },
  { title: 'EmailRoutingCheck' },
);

export const SettingsBody = Type.Object(
  {
    dmarc_policy: Type.Optional(
      StringEnum(['honor', 'ignore'], {
        description:
          'honor: refuse a message whose DMARC fails under p=reject; ignore: forward it (the verdict is logged)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CatchAll = Type.Object(
  { enabled: Type.Boolean(), action: StringEnum(['drop', 'forward']), destination: Nullable(Type.String()) },
  { title: 'EmailCatchAll' },
);
export const CatchAllBody = Type.Object(
  {
    enabled: Type.Boolean(),
    action: StringEnum(['drop', 'forward']),
    destination: Type.Optional(Nullable(Address('Where the catch-all forwards (action forward)'))),
  },
  { additionalProperties: false },
);

export const EmailAddress = Type.Object(
  {
    id: Id(),
    address: Type.String(),
    destination: Type.String(),
    destination_verified: Type.Boolean(),
    enabled: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'EmailAddress' },
);
export const AddressList = Type.Object({
  addresses: Type.Array(EmailAddress),
  max_email_rules: Type.Integer(),
});
export const AddressCreate = Type.Object(
  {
    address: Address('A local part (`info`) or the whole address at this domain'),
    destination: Address('A destination address; a new one is added to the owner’s destinations and mailed a link'),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const AddressUpdate = Type.Object(
  {
    address: Type.Optional(Address('New local part')),
    destination: Type.Optional(Address('New destination')),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const AddressParams = Type.Object({ domain: Type.String(), id: Id() });

export const Destination = Type.Object(
  {
    id: Id(),
    email: Type.String(),
    verified: Type.Boolean(),
    verified_at: Nullable(Type.String({ format: 'date-time' })),
    verification_sent_at: Nullable(Type.String({ format: 'date-time' })),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'EmailDestination' },
);
export const DestinationList = Type.Object({ destinations: Type.Array(Destination) });
export const DestinationCreate = Type.Object(
  { email: Address('The destination address') },
  { additionalProperties: false },
);
export const DestinationParams = Type.Object({ id: Id() });
export const VerifyBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200, description: 'The token of the emailed link' }) },
  { additionalProperties: false },
);

export const Counts = Type.Object(
  {
    last_24h: Type.Object({
      forwarded: Type.Integer(),
      refused: Type.Integer(),
      deferred: Type.Integer(),
      bounced: Type.Integer(),
      dropped: Type.Integer(),
      sent: Type.Integer(),
    }),
    today: Type.Object({
      forwards: Type.Integer(),
      max_email_forwards_per_day: Type.Integer(),
      sends: Type.Integer(),
      max_email_sends_per_day: Type.Integer(),
    }),
  },
  { title: 'EmailCounts' },
);
export const ActivityQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  before: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Entries with a smaller id (the next page)',
    }),
  ),
});
export const ActivityEntry = Type.Object(
  {
    id: Type.Integer(),
    at: Type.String({ format: 'date-time' }),
    direction: StringEnum(['in', 'out']),
    mail_from: Type.String(),
    rcpt_to: Type.String(),
    destination: Type.String(),
    message_id: Type.String(),
    size: Type.Integer(),
    spf: Type.String(),
    dkim: Type.String(),
    dmarc: Type.String(),
    action: Type.String({ description: 'forwarded, refused, deferred, bounced, dropped or sent' }),
    reason: Type.String(),
    smtp_response: Type.String(),
  },
  { title: 'EmailActivity' },
);
export const ActivityList = Type.Object({ entries: Type.Array(ActivityEntry) });

export const SetupBody = Type.Object(
  { address: Address('The first custom address'), destination: Address('Where it forwards') },
  { additionalProperties: false },
);
export const SetupResult = Type.Object({ routing: RoutingStatus, address: EmailAddress });

export const SendBody = Type.Object(
  {
    from: Address('A local part or an address at this domain'),
    to: Address('A verified destination of the domain’s owner'),
    subject: Type.String({ maxLength: 998 }),
    text: Type.String({ maxLength: MAX_SEND_TEXT }),
  },
  { additionalProperties: false },
);
export const SendResult = Type.Object({ delivered: Type.Boolean(), response: Type.String() });
