// TypeBox schemas of the gateway routes.
import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../../openapi/schemas.js';
import { GATEWAYS } from './catalogue.js';

const Timestamp = Type.String({ format: 'date-time' });

export const GatewayParams = Type.Object({
  domain: Type.String({ description: 'Domain name, percent-encoded when needed' }),
  gateway: StringEnum(
    GATEWAYS.map((g) => g.id),
    { description: 'Gateway id from the catalogue (GET /domains/{domain}/gateways/)' },
  ),
});

export const IconParams = Type.Object({
  gateway: StringEnum(
    GATEWAYS.map((g) => g.id),
    { description: 'Gateway id from the catalogue' },
  ),
});

export const Gateway = Type.Object(
  {
    id: Type.String({ description: 'Catalogue id' }),
    title: Type.String(),
    description: Type.String(),
    icon_url: Type.String({ description: 'Path of the icon image (GET, SVG)' }),
    records: Type.Array(
      Type.Object({
        name: Type.String(),
        type: Type.String(),
        destination: Type.String(),
        mx_priority: Type.Optional(Type.Integer()),
        ttl: Type.Integer(),
      }),
      { description: 'The records switching on creates in this zone' },
    ),
    enabled: Type.Boolean({ description: 'Switched on for this domain' }),
    name: Nullable(Type.String({ description: 'The display name given when switched on (or by a rename)' })),
    record_ids: Type.Array(Type.Integer(), {
      description: 'Ids of the records switching on created (switching off removes them)',
    }),
    enabled_at: Nullable(Timestamp),
    updated_at: Nullable(Timestamp),
  },
  { title: 'Gateway' },
);

export const GatewayList = Type.Object({ gateways: Type.Array(Gateway) }, { title: 'GatewayList' });

export const GatewayOn = Type.Object(
  {
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: "Display name; default: the gateway's title" }),
    ),
  },
  { title: 'GatewaySwitchOn', additionalProperties: false },
);

export const GatewayRename = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 64, description: 'New display name' }) },
  { title: 'GatewayRename', additionalProperties: false },
);

export const GatewayTerms = Type.Object(
  {
    version: Type.String({ description: 'Current version of the terms of use' }),
    text: Type.String(),
    accepted: Type.Boolean({ description: 'The calling account accepted the current version' }),
    accepted_version: Nullable(Type.String()),
    accepted_at: Nullable(Timestamp),
  },
  { title: 'GatewayTerms' },
);
