// Wallet movements: every change of a balance is one row of wallet_transactions written with it, in one transaction.
import { and, eq, gte, sql } from 'drizzle-orm';
import type { Tx } from '../../db/index.js';
import { walletTransactions, wallets, type WalletTransactionKind } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { MAX_RIALS } from './invoices.js';

export interface Movement {
  kind: WalletTransactionKind;
  description: string;
  invoiceId?: number | null;
  paymentId?: number | null;
}

/** Adds `amount` to the user's wallet (created on first use); returns the transaction row. */
export async function credit(tx: Tx, userId: number, amount: number, m: Movement) {
  if (!Number.isSafeInteger(amount) || amount <= 0 || amount > MAX_RIALS)
    throw new ApiError('CP_ERR_INVALID_INPUT', `amount must be 1 to ${MAX_RIALS} rials, got ${amount}`);
  const [w] = await tx
    .insert(wallets)
    .values({ userId, balanceRials: amount })
    .onConflictDoUpdate({
      target: wallets.userId,
      set: { balanceRials: sql`${wallets.balanceRials} + ${amount}`, updatedAt: sql`now()` },
    })
    .returning();
  return record(tx, userId, amount, w.balanceRials, m);
}

/**
 * Takes `amount` from the user's wallet when the balance covers it (one conditional update: two charges never
 * both spend the same rials); null when it does not.
 */
export async function debit(tx: Tx, userId: number, amount: number, m: Movement) {
  if (amount === 0) return null;
  const [w] = await tx
    .update(wallets)
    .set({ balanceRials: sql`${wallets.balanceRials} - ${amount}`, updatedAt: sql`now()` })
    .where(and(eq(wallets.userId, userId), gte(wallets.balanceRials, amount)))
    .returning();
  if (!w) return null;
  return record(tx, userId, -amount, w.balanceRials, m);
}

async function record(tx: Tx, userId: number, amount: number, balanceAfter: number, m: Movement) {
  const [row] = await tx
    .insert(walletTransactions)
    .values({
      userId,
      kind: m.kind,
      amountRials: amount,
      balanceAfterRials: balanceAfter,
      description: m.description,
      invoiceId: m.invoiceId ?? null,
      paymentId: m.paymentId ?? null,
    })
    .returning();
  return row;
}

/** Links a transaction to the invoice issued for it (the invoice is issued after the money moved). */
export async function linkInvoice(tx: Tx, transactionId: number, invoiceId: number): Promise<void> {
  await tx.update(walletTransactions).set({ invoiceId }).where(eq(walletTransactions.id, transactionId));
}
