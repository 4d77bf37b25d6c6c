// Issuing invoices: numbered per Jalali year in the invoice's own transaction, VAT on subscription and manual
// invoices only, the holder printed as the account reads at issue time. Money is integer rials.
import { eq, sql } from 'drizzle-orm';
import type { Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import {
  billingProfiles,
  invoiceItems,
  invoices,
  users,
  type InvoiceHolder,
  type InvoiceKind,
  type InvoiceStatus,
} from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { invoiceNumber, jalaliYear } from './jalali.js';

/** Kinds that carry VAT (spec Invoice: subscription and manual are taxed; period and topup are not). */
export const TAXED_KINDS: readonly InvoiceKind[] = ['subscription', 'manual'];
/** A bound on one amount, so sums and tax stay exact in a double (2^53): a hundred trillion rials. */
export const MAX_RIALS = 100_000_000_000_000;

export interface InvoiceItemInput {
  description: string;
  quantity: number;
  unitPriceRials: number;
}

export interface InvoiceInput {
  userId: number;
  kind: InvoiceKind;
  status: InvoiceStatus;
  items: readonly InvoiceItemInput[];
  domainId?: number | null;
  domainName?: string;
  subscriptionId?: number | null;
  paymentId?: number | null;
  notes?: string;
  periodStart?: Date | null;
  periodEnd?: Date | null;
  issuedAt?: Date;
  paidAt?: Date | null;
}

/** VAT of a subtotal at `percent`, rounded half up to a whole rial. */
export function taxOf(subtotal: number, percent: number): number {
  return Math.floor((subtotal * percent + 50) / 100);
}

/**
 * Draws the next sequence of the Jalali year: the counter row is created or bumped by one statement that holds its
 * lock until the caller's transaction ends, so concurrent invoices wait in turn and a rolled-back invoice gives its
 * number back (no gaps). The unique (jalali_year, sequence) index is the last line of defence.
 */
async function nextSequence(tx: Tx, year: number): Promise<number> {
  const res = await tx.execute(sql`
    INSERT INTO invoice_counters (jalali_year, last_sequence) VALUES (${year}, 1)
    ON CONFLICT (jalali_year) DO UPDATE SET last_sequence = invoice_counters.last_sequence + 1
    RETURNING last_sequence`);
  return Number(rowsOf<{ last_sequence: number }>(res)[0].last_sequence);
}

/** The holder block as printed on the invoice: the account's email and name, and its billing profile. */
export async function holderOf(tx: Tx, userId: number): Promise<InvoiceHolder> {
  const [row] = await tx
    .select({ user: users, profile: billingProfiles })
    .from(users)
    .leftJoin(billingProfiles, eq(billingProfiles.userId, users.id))
    .where(eq(users.id, userId));
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', `no user with id ${userId}`);
  return {
    id: row.user.id,
    email: row.user.email,
    phone_number: row.profile?.phoneNumber ?? '',
    name: row.user.name,
    address: row.profile?.address ?? '',
    birth_date: row.profile?.birthDate ?? null,
  };
}

/** Issues one invoice with its items in `tx`; returns the stored row. */
export async function issueInvoice(tx: Tx, input: InvoiceInput, vatPercent: number) {
  if (input.items.length === 0) throw new ApiError('CP_ERR_INVALID_INPUT', 'an invoice needs at least one item');
  const items = input.items.map((i) => {
    if (!Number.isSafeInteger(i.quantity) || i.quantity < 1 || i.quantity > MAX_RIALS)
      throw new ApiError('CP_ERR_INVALID_INPUT', `quantity must be a positive integer, got ${i.quantity}`);
    if (!Number.isSafeInteger(i.unitPriceRials) || i.unitPriceRials < 0 || i.unitPriceRials > MAX_RIALS)
      throw new ApiError('CP_ERR_INVALID_INPUT', `unit price must be 0 to ${MAX_RIALS} rials, got ${i.unitPriceRials}`);
    const total = i.quantity * i.unitPriceRials;
    if (total > MAX_RIALS) throw new ApiError('CP_ERR_INVALID_INPUT', `an item may come to at most ${MAX_RIALS} rials`);
    return { ...i, totalRials: total };
  });
  const subtotal = items.reduce((a, i) => a + i.totalRials, 0);
  if (subtotal > MAX_RIALS)
    throw new ApiError('CP_ERR_INVALID_INPUT', `an invoice may come to at most ${MAX_RIALS} rials`);
  const taxPercent = TAXED_KINDS.includes(input.kind) ? vatPercent : 0;
  const tax = taxOf(subtotal, taxPercent);
  const issuedAt = input.issuedAt ?? new Date();
  const year = jalaliYear(issuedAt);
  const holder = await holderOf(tx, input.userId);
  const sequence = await nextSequence(tx, year);
  const [invoice] = await tx
    .insert(invoices)
    .values({
      jalaliYear: year,
      sequence,
      number: invoiceNumber(year, sequence),
      userId: input.userId,
      domainId: input.domainId ?? null,
      domainName: input.domainName ?? '',
      subscriptionId: input.subscriptionId ?? null,
      paymentId: input.paymentId ?? null,
      kind: input.kind,
      status: input.status,
      subtotalRials: subtotal,
      taxRials: tax,
      totalRials: subtotal + tax,
      taxPercent,
      holder,
      periodStart: input.periodStart ?? null,
      periodEnd: input.periodEnd ?? null,
      notes: input.notes ?? '',
      issuedAt,
      paidAt: input.status === 'paid' ? (input.paidAt ?? issuedAt) : null,
    })
    .returning();
  await tx.insert(invoiceItems).values(
    items.map((i) => ({
      invoiceId: invoice.id,
      description: i.description,
      quantity: i.quantity,
      unitPriceRials: i.unitPriceRials,
      totalRials: i.totalRials,
    })),
  );
  return invoice;
}

/** Marks an unpaid invoice paid. */
export async function markInvoicePaid(tx: Tx, invoiceId: number, at = new Date()): Promise<void> {
  await tx.update(invoices).set({ status: 'paid', paidAt: at, updatedAt: at }).where(eq(invoices.id, invoiceId));
}
