// Request and response schemas of the sign-in (browser surfaces; not in the OpenAPI document, which describes the API
// that keys reach: API keys get 403 on /auth/** and /users/**).
import { Type } from '@sinclair/typebox';
import { PASSWORD_MAX_LENGTH } from './store.js';

const Password = Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH });

export const LoginBody = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254 }), password: Password },
  { additionalProperties: false },
);

export const PasswordChangeBody = Type.Object(
  { current_password: Password, new_password: Password },
  { additionalProperties: false },
);

export const SessionAnswer = Type.Object({
  user: Type.Object({ id: Type.Integer(), email: Type.String(), name: Type.String() }),
  csrf_token: Type.String({ description: 'Send it back in X-CSRF-Token on every state-changing request' }),
  expires_at: Type.String({ format: 'date-time' }),
});

export const SessionIdParams = Type.Object(
  { id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) },
  { additionalProperties: false },
);
