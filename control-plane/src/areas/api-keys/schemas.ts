// Schemas of Settings → API keys (browser session only: every API key gets 403 on /users/**; not in the OpenAPI
// document).
import { Type } from '@sinclair/typebox';
import { StringEnum } from '../../openapi/schemas.js';
import { EXPIRY_CHOICES } from '../../auth/api-keys.js';

export const KeyCreateBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: '^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*$',
    }),
    expires: StringEnum([...EXPIRY_CHOICES]),
    mode: StringEnum(['full', 'read_only']),
  },
  { additionalProperties: false },
);

export const KeyIdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2147483647 }) });
