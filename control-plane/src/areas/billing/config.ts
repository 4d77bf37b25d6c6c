// Billing settings, read by config.ts through its EnvReader: VAT, grace, trial and the length of a billing day.
import type { EnvReader } from '@platform/shared';

export interface BillingConfig {
  /** BILLING_VAT_PERCENT: VAT on subscription and manual invoices (period and top-up invoices carry none). */
  vatPercent: number;
  /** BILLING_GRACE_DAYS: after an expiry not renewed, the plan keeps working this long (status grace). */
  graceDays: number;
  /** BILLING_TRIAL_DAYS: length of a trial subscription given without a plan term. */
  trialDays: number;
  /** BILLING_DAY_SECONDS (ms here): the length of a billing day; tests shorten it so terms end in seconds. */
  dayMs: number;
}

export function loadBillingConfig(r: EnvReader): BillingConfig {
  return {
    vatPercent: r.int('BILLING_VAT_PERCENT', 10, 0, 100),
    graceDays: r.int('BILLING_GRACE_DAYS', 7, 0, 365),
    trialDays: r.int('BILLING_TRIAL_DAYS', 14, 1, 365),
    dayMs: r.int('BILLING_DAY_SECONDS', 86_400, 1, 86_400) * 1000,
  };
}
