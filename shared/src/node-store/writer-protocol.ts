// Messages between the node store and its writer thread (writer-thread.ts).
import type { WrittenEntry } from './writer.js';

export interface WriterData {
  path: string;
  durability: 'full' | 'data' | 'none';
}

export type ToWriter =
  /** One batch: the entries laid end to end in `buffer` (transferred), entry i ending at ends[i]. */
  { type: 'apply'; id: number; buffer: ArrayBuffer; ends: number[] } | { type: 'close' };

export type FromWriter =
  | { type: 'written'; id: number; written: Array<Omit<WrittenEntry, 'recordIds'> & { recordIds: Float64Array }> }
  | { type: 'failed'; id: number; message: string; stack?: string }
  | { type: 'closed' };
