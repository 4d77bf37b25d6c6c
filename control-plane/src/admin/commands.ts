// The admin CLI's commands, each a function of (context, arguments); printing goes through ctx.out.
import type { Db } from '../db/index.js';
import { changeDomain, type ConfigLog } from '../config-log/index.js';
import { eq } from 'drizzle-orm';
import { apiKeys, domainMembers, plans } from '../db/schema.js';
import { notify, notifyDomain } from '../areas/notifications/store.js';
import { ApiError, isApiError } from '../errors.js';
import { removeMember } from '../areas/sharing/service.js';
import { createApiKey, EXPIRY_CHOICES, listApiKeys, revokeApiKey, type KeyExpiry } from '../auth/api-keys.js';
import { isMemberRole, MEMBER_ROLES } from '../auth/permissions.js';
import { effectiveFeatures } from '../plans/entitlements.js';
import { overridableField, parseOverride, setOverride, setPlan } from '../plans/subscriptions.js';
import { createUser, setUserActive, userByEmail } from './users.js';
import { announceKeyCreated } from '../areas/api-keys/notice.js';
import { generatePassword, setPassword } from '../areas/login/store.js';
import { domainByName, positionals, UsageError } from './args.js';
import { SUPPORT_COMMANDS, SUPPORT_USAGE } from './support-commands.js';
import { BILLING_COMMANDS, BILLING_USAGE } from './billing-commands.js';
import { SSO_COMMANDS, SSO_USAGE } from './sso-commands.js';
import type { BillingConfig } from '../areas/billing/config.js';
import type { ControlPlaneConfig } from '../config.js';

export { UsageError };

export const USAGE = `usage: npm run admin -- <command>
  user create EMAIL [--name NAME]
  user deactivate EMAIL
  user activate EMAIL
  user password EMAIL   (sets a new generated sign-in password and prints it alone on stdout; ends the account's sessions)
  key create EMAIL [--read-only] [--expires never|30|90|365] [--name NAME]   (prints the key alone on stdout)
  key list EMAIL
  key revoke KEY_ID
  plan list
  plan show DOMAIN
  plan set DOMAIN PLAN_SLUG
  plan override DOMAIN FIELD VALUE
  plan clear-override DOMAIN FIELD
  member add DOMAIN EMAIL admin|editor|viewer
  member remove DOMAIN EMAIL
${SUPPORT_USAGE}
${BILLING_USAGE}
${SSO_USAGE}`;

/** The command named by argv, or null after writing the usage error. */
export function findCommand(argv: string[], err: (line: string) => void): Command | null {
  const [group, action] = argv;
  const command = COMMANDS[`${group ?? ''} ${action ?? ''}`];
  if (!command)
    err(
      group === undefined || group === 'help' || group === '--help'
        ? USAGE
        : `unknown command "${argv.join(' ')}"\n${USAGE}`,
    );
  return command ?? null;
}

/** Runs one command line; returns the exit code: 0 done, 1 the command failed, 2 usage error. */
export async function executeCommand(
  ctx: CommandContext,
  argv: string[],
  err: (line: string) => void,
): Promise<number> {
  const command = findCommand(argv, err);
  if (!command) return 2;
  try {
    await command(ctx, argv.slice(2));
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      err(`error: ${e.message}\n${USAGE}`);
      return 2;
    }
    err(`error: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

export interface CommandContext {
  db: Db;
  configLog: ConfigLog;
  out: (line: string) => void;
  /** Billing settings; absent: read from this process's environment (the control plane's, through the socket). */
  billing?: BillingConfig;
  /** The control plane's configuration (SSO key sealing); absent: read from this process's environment. */
  config?: Readonly<ControlPlaneConfig>;
}
type Command = (ctx: CommandContext, args: string[]) => Promise<void>;

/**
 * A plan change can change what nodes enforce (rule types, features): it runs through the write path with the
 * domain sent whole, in the same transaction.
 */
function changePlan<T>(ctx: CommandContext, domainId: number, fn: (tx: Db) => Promise<T>): Promise<T> {
  return changeDomain(ctx, domainId, async (tx) => ({ value: await fn(tx), change: { whole: true } }));
}

const iso = (d: Date | null) => (d ? d.toISOString() : '-');

export const COMMANDS: Record<string, Command> = {
  async 'user create'(ctx, args) {
    const { pos, values } = positionals(args, ['EMAIL'], { name: { type: 'string' } });
    const user = await createUser(ctx.db, pos[0], (values.name as string | undefined) ?? '');
    ctx.out(`created user ${user.email} (id ${user.id})`);
  },
  async 'user deactivate'(ctx, args) {
    const { pos } = positionals(args, ['EMAIL']);
    await setUserActive(ctx.db, pos[0], false);
    ctx.out(`deactivated ${pos[0]}: its keys now answer 403 account is inactive`);
  },
  async 'user activate'(ctx, args) {
    const { pos } = positionals(args, ['EMAIL']);
    await setUserActive(ctx.db, pos[0], true);
    ctx.out(`activated ${pos[0]}`);
  },
  async 'user password'(ctx, args) {
    const { pos } = positionals(args, ['EMAIL']);
    const user = await userByEmail(ctx.db, pos[0]);
    const password = generatePassword();
    await setPassword(ctx.db, user.id, password);
    ctx.out(password); // alone on its line, shown once: only its scrypt hash is stored
  },
  async 'key create'(ctx, args) {
    const { pos, values } = positionals(args, ['EMAIL'], {
      'read-only': { type: 'boolean' },
      expires: { type: 'string' },
      name: { type: 'string' },
    });
    const expires = (values.expires as string | undefined) ?? 'never';
    if (!(EXPIRY_CHOICES as readonly string[]).includes(expires))
      throw new UsageError(`--expires must be one of ${EXPIRY_CHOICES.join(', ')}`);
    const user = await userByEmail(ctx.db, pos[0]);
    const created = await createApiKey(ctx.db, user.id, {
      readOnly: values['read-only'] === true,
      expires: expires as KeyExpiry,
      name: (values.name as string | undefined) ?? '',
    });
    await announceKeyCreated(ctx.db, user.id, created, {
      readOnly: values['read-only'] === true,
      expires: expires as KeyExpiry,
    });
    ctx.out(created.key); // alone on its line: `KEY=$(npm run -s admin -- key create a@example.org)`
  },
  async 'key list'(ctx, args) {
    const { pos } = positionals(args, ['EMAIL']);
    const user = await userByEmail(ctx.db, pos[0]);
    const now = new Date();
    ctx.out('id\tprefix\tmode\tstatus\texpires_at\tlast_used_at\tname');
    for (const k of await listApiKeys(ctx.db, user.id)) {
      const status = k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt <= now ? 'expired' : 'active';
      ctx.out(
        [
          k.id,
          `${k.prefix}…`,
          k.readOnly ? 'read-only' : 'full',
          status,
          iso(k.expiresAt),
          iso(k.lastUsedAt),
          k.name,
        ].join('\t'),
      );
    }
  },
  async 'key revoke'(ctx, args) {
    const { pos } = positionals(args, ['KEY_ID']);
    const id = Number(pos[0]);
    if (!Number.isInteger(id) || id <= 0) throw new UsageError(`KEY_ID must be a positive integer, got "${pos[0]}"`);
    const [key] = await ctx.db
      .select({ userId: apiKeys.userId, prefix: apiKeys.keyPrefix })
      .from(apiKeys)
      .where(eq(apiKeys.id, id));
    if (!key || !(await revokeApiKey(ctx.db, id)))
      throw new ApiError('CP_ERR_NOT_FOUND', `no active key with id ${id}`);
    await notify(ctx.db, {
      userId: key.userId,
      category: 'account',
      kind: 'account.key_revoked',
      title: `API key ${key.prefix}… was revoked`,
      body: 'Requests with it are refused from now on.',
      data: { key_id: id },
    });
    ctx.out(`revoked key ${id}`);
  },
  async 'plan list'(ctx, args) {
    positionals(args, []);
    for (const p of await ctx.db.select().from(plans).orderBy(plans.priceRials))
      ctx.out(`${p.slug}\t${p.name}\t${p.priceRials} rials`);
  },
  async 'plan show'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN']);
    const domain = await domainByName(ctx.db, pos[0]);
    ctx.out(JSON.stringify(await effectiveFeatures(ctx.db, domain.id), null, 2));
  },
  async 'plan set'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN', 'PLAN_SLUG']);
    const domain = await domainByName(ctx.db, pos[0]);
    const slug = await changePlan(ctx, domain.id, async (tx) => {
      const plan = await setPlan(tx, domain.id, pos[1]);
      await notifyDomain(tx, domain.id, {
        category: 'billing',
        kind: 'billing.plan_changed',
        title: `${domain.name} is now on the ${plan} plan`,
        body: 'Support changed the plan of the domain; its features and limits apply at once.',
        data: { plan },
      });
      return plan;
    });
    ctx.out(`${domain.name} is now on plan ${slug}`);
  },
  async 'plan override'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN', 'FIELD', 'VALUE']);
    const domain = await domainByName(ctx.db, pos[0]);
    const { field, value } = parseOverride(pos[1], pos[2]);
    await changePlan(ctx, domain.id, (tx) => setOverride(tx, domain.id, field, value));
    ctx.out(`${domain.name}: override_${field} = ${String(value)}`);
  },
  async 'plan clear-override'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN', 'FIELD']);
    const domain = await domainByName(ctx.db, pos[0]);
    const field = overridableField(pos[1]);
    await changePlan(ctx, domain.id, (tx) => setOverride(tx, domain.id, field, null));
    ctx.out(`${domain.name}: override_${field} cleared`);
  },
  async 'member add'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN', 'EMAIL', 'ROLE']);
    if (!isMemberRole(pos[2])) throw new UsageError(`ROLE must be one of ${MEMBER_ROLES.join(', ')}`);
    const domain = await domainByName(ctx.db, pos[0]);
    const user = await userByEmail(ctx.db, pos[1]);
    if (user.id === domain.ownerId) throw new ApiError('CP_ERR_CONFLICT', `${user.email} owns ${domain.name}`);
    await ctx.db
      .insert(domainMembers)
      .values({ domainId: domain.id, userId: user.id, role: pos[2] })
      .onConflictDoUpdate({ target: [domainMembers.domainId, domainMembers.userId], set: { role: pos[2] } });
    ctx.out(`${user.email} is ${pos[2]} of ${domain.name}`);
  },
  async 'member remove'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN', 'EMAIL']);
    const domain = await domainByName(ctx.db, pos[0]);
    const user = await userByEmail(ctx.db, pos[1]);
    // The API's removal: notification choices go with the membership, and a nomination as payer with it.
    await removeMember(ctx.db, domain, null, user.id).catch((err: unknown) => {
      if (isApiError(err) && err.code === 'CP_ERR_NOT_FOUND')
        throw new ApiError('CP_ERR_NOT_FOUND', `${user.email} is not a member of ${domain.name}`);
      throw err;
    });
    ctx.out(`${user.email} removed from ${domain.name}`);
  },
  ...SUPPORT_COMMANDS,
  ...SSO_COMMANDS,
  ...BILLING_COMMANDS,
};
