// TypeBox schemas of the domain-lifecycle routes: NsCheckResult, VerifyResult, SslDelegationCheckResult, DeveloperMode.
import { Type } from '@sinclair/typebox';
import { Nullable } from '../../openapi/schemas.js';

const Timestamp = Type.String({ format: 'date-time' });

export const NsCheckResult = Type.Object(
  {
    ok: Type.Boolean({ description: 'The delegation matches exactly one accepted nameserver set in full' }),
    state: Type.String({ description: 'The domain state after the check (active when it passed)' }),
    nameservers: Type.Array(Type.String(), { description: 'The NS set the public resolvers see' }),
    expected: Type.Array(Type.Array(Type.String()), {
      description: 'The accepted sets; delegate to exactly one, in full',
    }),
    matched_set: Nullable(Type.Integer({ description: 'Index of the matched set' })),
    error: Type.Optional(Type.String({ description: 'Why the delegation does not pass' })),
    checked_at: Timestamp,
  },
  { title: 'NsCheckResult' },
);

export const VerifyResult = Type.Object(
  {
    verified: Type.Boolean(),
    method: Type.Optional(Type.String({ description: 'cname (ssl_delegation) or txt (verification)' })),
    state: Type.String(),
  },
  { title: 'VerifyResult' },
);

export const VerifyFailure = Type.Object(
  {
    error: Type.String({ description: 'What the resolvers saw' }),
    verified: Type.Literal(false),
  },
  { title: 'VerifyFailure' },
);

export const SslDelegationCheckResult = Type.Object(
  {
    ok: Type.Boolean(),
    error: Type.Optional(Type.String()),
  },
  { title: 'SslDelegationCheckResult' },
);

export const DeveloperMode = Type.Object(
  {
    enabled: Type.Boolean(),
    expires_at: Nullable(Timestamp),
  },
  { title: 'DeveloperMode' },
);
