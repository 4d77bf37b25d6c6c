// Invoice numbers: sequential per Jalali (Persian solar) year, the year read on Iran's clock (jalaali-js converts).
import { toJalaali } from 'jalaali-js';

/**
 * Iran Standard Time, UTC+03:30. Iran dropped daylight saving in 2022, and before that it began only after Nowruz
 * (the day after 1 Farvardin), so the year always turns at 00:00 +03:30 on 1 Farvardin.
 */
export const IRAN_OFFSET_MS = 12_600_000;

/** The Jalali year an instant falls in, in Iran. */
export function jalaliYear(at: Date): number {
  const local = new Date(at.getTime() + IRAN_OFFSET_MS);
  return toJalaali(local.getUTCFullYear(), local.getUTCMonth() + 1, local.getUTCDate()).jy;
}

/** `1405-000001`: the year, then the sequence within it, six digits (wider past 999,999). */
export function invoiceNumber(year: number, sequence: number): string {
  return `${year}-${String(sequence).padStart(6, '0')}`;
}
