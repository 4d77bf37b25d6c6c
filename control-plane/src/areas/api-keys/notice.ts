// The notification an account gets when one of its API keys is created (by the admin CLI or in the panel).
import type { Db } from '../../db/index.js';
import type { CreatedKey, KeyExpiry } from '../../auth/api-keys.js';
import { notify } from '../notifications/store.js';

export async function announceKeyCreated(
  db: Db,
  userId: number,
  created: CreatedKey,
  opts: { readOnly: boolean; expires: KeyExpiry },
): Promise<void> {
  await notify(db, {
    userId,
    category: 'account',
    kind: 'account.key_created',
    title: `A new API key was created (${created.key.slice(0, 8)}…)`,
    body:
      `${opts.readOnly ? 'Read-only' : 'Full access'}, ` +
      `${opts.expires === 'never' ? 'never expires' : `expires in ${opts.expires} days`}. If you did not ask for it, revoke it.`,
    data: { key_id: created.id },
  });
}
