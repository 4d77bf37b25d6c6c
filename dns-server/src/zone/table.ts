// The set of zones served, found by the longest apex that is a suffix of the query name.
import type { CompiledZone } from './model.js';
import { keyBytes, MAX_LABELS, type ParsedQuery } from '../wire/query.js';
import { nameEquals, nameHash } from './name-index.js';
import { AnswerCache } from './answer-cache.js';

/** Labels of a lower-case apex without the trailing dot ('' is the root: 0). */
function labelsOf(apex: string): number {
  if (apex === '') return 0;
  let n = 1;
  for (let i = apex.indexOf('.'); i >= 0; i = apex.indexOf('.', i + 1)) n++;
  return Math.min(n, MAX_LABELS);
}

export class ZoneTable {
  private readonly zones = new Map<string, CompiledZone>();
  /** The zones by nameHash of their apex (two apexes with one hash: the later one, find() checks the name). */
  private readonly byHash = new Map<number, CompiledZone>();
  /** Served apexes by their number of labels: find() reads the Map only for suffixes as long as some apex. */
  private readonly apexesWithLabels = new Uint32Array(MAX_LABELS + 1);

  /** Answers by query, kept flat (answer-cache.ts); emptied by every set and delete, so they follow the zones. */
  readonly answers = new AnswerCache();

  /**
   * Installs or replaces a zone: one Map write, so a query sees the old or the new zone, never a mix. Also called
   * after a zone served is patched in place: the kept answers are dropped either way.
   */
  set(zone: CompiledZone): void {
    this.answers.clear();
    if (!this.zones.has(zone.apex)) this.apexesWithLabels[labelsOf(zone.apex)]++;
    this.zones.set(zone.apex, zone);
    this.byHash.set(nameHash(zone.apex), zone);
  }
  delete(apex: string): void {
    this.answers.clear();
    if (this.zones.delete(apex)) this.apexesWithLabels[labelsOf(apex)]--;
    const h = nameHash(apex);
    if (this.byHash.get(h)?.apex !== apex) return;
    this.byHash.delete(h);
    // Another served apex with the same hash takes the slot back (looked for only when this one held it).
    for (const z of this.zones.values()) if (nameHash(z.apex) === h) this.byHash.set(h, z);
  }
  get(apex: string): CompiledZone | undefined {
    return this.zones.get(apex);
  }
  get size(): number {
    return this.zones.size;
  }
  apexes(): string[] {
    return [...this.zones.keys()];
  }

  /** Offset inside the key (= inside the wire name) where the apex of the last zone found starts. */
  apexOffset = 0;

  /** find() for a parsed query, from its name's bytes and suffix hashes (the key string is made only on a clash). */
  findQuery(q: ParsedQuery): CompiledZone | undefined {
    const counts = this.apexesWithLabels;
    const labelCount = q.labelCount;
    for (let i = 0; i < labelCount; i++) {
      if (counts[labelCount - i] === 0) continue; // no apex has this many labels
      const start = q.labelStarts[i];
      let z = this.byHash.get(q.suffixHashes[i]);
      if (z !== undefined && !nameEquals(z.apex, keyBytes, start, q.keyLength - start))
        z = this.zones.get(q.key.substring(start)); // two apexes with one hash
      if (z !== undefined) {
        this.apexOffset = start;
        return z;
      }
    }
    return undefined;
  }

  /** The most specific zone containing `key`, given the start offset of each of its labels. */
  find(key: string, labelStarts: Int32Array, labelCount: number): CompiledZone | undefined {
    const zones = this.zones;
    const counts = this.apexesWithLabels;
    for (let i = 0; i < labelCount; i++) {
      if (counts[labelCount - i] === 0) continue; // no apex has this many labels
      const start = labelStarts[i];
      const z = zones.get(i === 0 ? key : key.substring(start));
      if (z !== undefined) {
        this.apexOffset = start;
        return z;
      }
    }
    return undefined;
  }
}
