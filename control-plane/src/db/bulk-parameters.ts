// Which statements are kept prepared (pglite-prepared.ts, pg-prepared.ts): not those with a bulk parameter. Its
// statement is worth planning for the values it has (a 1000-id array: its best plan depends on the array's size,
// which a generic plan does not know; bench/RESULTS.md issue 8 saw a 1000-item batch-update 60 % dearer), and its
// planning is small beside its execution.

/** A parameter longer than this (characters, bytes or elements) makes a statement run unprepared. */
export const BULK_PARAMETER = 1024;

export function hasBulkParameter(params: readonly unknown[] | undefined): boolean {
  if (!params) return false;
  for (const p of params) {
    if (
      typeof p === 'string'
        ? p.length > BULK_PARAMETER
        : p instanceof Uint8Array
          ? p.byteLength > BULK_PARAMETER
          : Array.isArray(p) && p.length > BULK_PARAMETER
    )
      return true;
  }
  return false;
}
