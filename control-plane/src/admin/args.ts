// Argument parsing shared by the admin CLI's command modules.
import { parseArgs, type ParseArgsConfig } from 'node:util';

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
