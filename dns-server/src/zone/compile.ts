// Compiles a DomainSnapshot into a CompiledZone from scratch (ZoneBuilder keeps one up to date change by change).
import type { DomainSnapshot } from '@platform/shared/config';
import type { CompiledZone } from './model.js';
import { ZoneBuilder } from './builder.js';
import type { CompileOptions } from './owner.js';

export { SERVED_STATES } from './builder.js';
export type { CompileOptions } from './owner.js';

export interface CompileResult {
  /** Null when the domain is not served in its state or mode (see SERVED_STATES). */
  zone: CompiledZone | null;
  /** Records skipped, each with its id or owner: `record 12: invalid IPv4 address "x"`. */
  problems: string[];
}

export function compileZone(snapshot: DomainSnapshot, opts: CompileOptions): CompileResult {
  const builder = new ZoneBuilder(snapshot, opts);
  return { zone: builder.zone, problems: builder.problems() };
}
