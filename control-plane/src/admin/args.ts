// Argument parsing shared by the admin CLI's command modules.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { eq } from 'drizzle-orm';
import type { Db } from '../db/index.js';
import { domains } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { normalizeDomainName } from '../areas/domains/domain-name.js';

export class UsageError extends Error {}

/** Exactly `names.length` positionals and the given options; anything else is a UsageError. */
export function positionals(args: string[], names: string[], options: ParseArgsConfig['options'] = {}) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (parsed.positionals.length !== names.length) {
    throw new UsageError(
      `expected ${names.join(' ')}, got ${parsed.positionals.length ? parsed.positionals.join(' ') : 'nothing'}`,
    );
  }
  return { pos: parsed.positionals, values: parsed.values as Record<string, string | boolean | undefined> };
}

/** A positive integer id argument. */
export function idArgument(raw: string, name: string): number {
  const id = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(id) || id <= 0 || id > 2_147_483_647)
    throw new UsageError(`${name} must be a positive integer, got "${raw}"`);
  return id;
}

/** The domain a DOMAIN argument names (normalised as the API does); ApiError 404 when there is none. */
export async function domainByName(db: Db, raw: string) {
  const name = normalizeDomainName(raw);
  const [domain] = await db.select().from(domains).where(eq(domains.name, name)).limit(1);
  if (!domain) throw new ApiError('CP_ERR_NOT_FOUND', `no domain ${name}`);
  return domain;
}
