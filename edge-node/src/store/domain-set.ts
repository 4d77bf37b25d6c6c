// Keeps the DomainTable in step with the node store: compiles every domain at start, then brings one domain up to
// date per applied entry, recompiling only the rules and names a delta touched (DomainBuilder).
import { componentLogger } from '@platform/shared';
import type { DomainSnapshot, Rule, ZoneRecord } from '@platform/shared/config';
import type { DomainChange } from '@platform/shared/node-store';
import { DomainBuilder, type CompiledDomain } from './domain-builder.js';
import type { DomainTable } from './snapshot.js';

const log = componentLogger('edge-node.snapshot');

/** The node store's reads a domain set needs. */
export interface DomainSource {
  getSnapshot(domain: string): DomainSnapshot | undefined;
  getHeader(domain: string): DomainSnapshot | undefined;
  getRecord(domain: string, id: number): ZoneRecord | undefined;
  getRule(domain: string, id: number): Rule | undefined;
}

export class DomainSet {
  private readonly builders = new Map<string, DomainBuilder>();

  constructor(
    readonly table: DomainTable,
    private readonly store: DomainSource,
  ) {}

  /**
   * Brings `change.domain` up to date with the store and returns what is served now (undefined: the domain is gone).
   * A domain that fails to compile keeps its previous version served and its builder is dropped, so the next change
   * compiles it whole from the store.
   */
  refresh(change: DomainChange): CompiledDomain | undefined {
    const { domain } = change;
    const builder = this.builders.get(domain);
    try {
      const compiled = change.kind === 'delta' && builder ? this.patch(builder, change) : this.compileWhole(domain);
      if (compiled) this.table.set(compiled);
      else this.table.delete(domain);
      return compiled;
    } catch (err) {
      this.builders.delete(domain);
      this.table.forgetLookups();
      log.error({ err, domain }, 'domain failed to compile; keeping the previous one');
      return this.table.get(domain);
    }
  }

  private patch(builder: DomainBuilder, change: DomainChange): CompiledDomain | undefined {
    const header = this.store.getHeader(change.domain);
    if (!header) return this.drop(change.domain);
    const records: ZoneRecord[] = [];
    const removedRecordIds: number[] = [];
    for (const id of change.recordIds) {
      const r = this.store.getRecord(change.domain, id);
      if (r) records.push(r);
      else removedRecordIds.push(id);
    }
    const rules: Rule[] = [];
    const removedRuleIds: number[] = [];
    for (const id of change.ruleIds) {
      const r = this.store.getRule(change.domain, id);
      if (r) rules.push(r);
      else removedRuleIds.push(id);
    }
    return builder.apply(header, { records, removedRecordIds, rules, removedRuleIds });
  }

  private compileWhole(domain: string): CompiledDomain | undefined {
    const snapshot = this.store.getSnapshot(domain);
    if (!snapshot) return this.drop(domain);
    const builder = this.builders.get(domain);
    if (builder) return builder.replace(snapshot);
    const created = new DomainBuilder(snapshot);
    this.builders.set(domain, created);
    return created.domain;
  }

  private drop(domain: string): undefined {
    this.builders.delete(domain);
    return undefined;
  }
}
