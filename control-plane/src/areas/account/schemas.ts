// Response schemas of the account reads (also the OpenAPI document).
import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../../openapi/schemas.js';

const Timestamp = Type.String({ format: 'date-time' });

export const WhoAmI = Type.Object(
  {
    user: Type.Object({ id: Type.Integer(), email: Type.String(), name: Type.String() }),
    key: Type.Object({
      id: Type.Integer(),
      name: Type.String(),
      prefix: Type.String(),
      mode: StringEnum(['full', 'read_only'], { description: '`read_only`: GET, HEAD and OPTIONS only' }),
      read_only: Type.Boolean(),
      expires_at: Nullable(Timestamp),
      last_used_at: Nullable(Timestamp),
      created_at: Timestamp,
    }),
    account: Type.Object({
      id: Type.Integer({ description: 'The account the key acts for (one person: the user above)' }),
      active: Type.Boolean(),
      created_at: Timestamp,
      owned_domains: Type.Integer(),
      shared_domains: Type.Integer({ description: 'Domains of others the account is a member of' }),
    }),
  },
  { title: 'WhoAmI' },
);

export const UnreadCounters = Type.Object(
  {
    notifications: Type.Integer({ description: 'Unread notifications (GET /notifications/unread-count)' }),
    support_tickets: Type.Integer({ description: 'Support tickets with replies not yet read' }),
    support_replies: Type.Integer({ description: 'Support replies not yet read' }),
  },
  { title: 'UnreadCounters' },
);

export const EdgeIps = Type.Object(
  {
    ipv4: Type.Array(Type.String(), { description: 'What proxied names answer A with' }),
    ipv6: Type.Array(Type.String(), { description: 'What proxied names answer AAAA with' }),
  },
  { title: 'EdgeIps', description: "The edge's proxy addresses" },
);
