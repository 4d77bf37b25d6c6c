// The set of zones served, found by the longest apex that is a suffix of the query name.
import type { CompiledZone } from './model.js';

export class ZoneTable {
  private readonly zones = new Map<string, CompiledZone>();

  /** Installs or replaces a zone: one Map write, so a query sees the old or the new zone, never a mix. */
  set(zone: CompiledZone): void {
    this.zones.set(zone.apex, zone);
  }
  delete(apex: string): void {
    this.zones.delete(apex);
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

  /** The most specific zone containing `key`, given the start offset of each of its labels. */
  find(key: string, labelStarts: Int32Array, labelCount: number): CompiledZone | undefined {
    const zones = this.zones;
    for (let i = 0; i < labelCount; i++) {
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
