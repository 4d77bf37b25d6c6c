// Drizzle tables of billing (migrations/0026_billing.sql): plan terms, wallets, payments, invoices.
import { pgTable, serial, integer, text, boolean, timestamp, jsonb, bigint, date } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const rials = (name: string) => bigint(name, { mode: 'number' });

export const planTerms = pgTable('plan_terms', {
  id: serial('id').primaryKey(),
  planId: integer('plan_id').notNull(),
  name: text('name').notNull(),
  durationDays: integer('duration_days').notNull(),
  priceRials: rials('price_rials').notNull(),
  quotaResetDays: integer('quota_reset_days').notNull().default(30),
  active: boolean('active').notNull().default(true),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const wallets = pgTable('wallets', {
  userId: integer('user_id').primaryKey(),
  balanceRials: rials('balance_rials').notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const payments = pgTable('payments', {
  id: serial('id').primaryKey(),
  userId: integer('user_id').notNull(),
  amountRials: rials('amount_rials').notNull(),
  status: text('status').$type<'pending' | 'paid' | 'failed'>().notNull(),
  gateway: text('gateway').notNull().default(''),
  authority: text('authority').notNull().default(''),
  refCode: text('ref_code').notNull().default(''),
  refId: text('ref_id').notNull().default(''),
  purpose: text('purpose').notNull().default('topup'),
  description: text('description').notNull().default(''),
  sandbox: boolean('sandbox').notNull().default(false),
  paidAt: ts('paid_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const invoiceCounters = pgTable('invoice_counters', {
  jalaliYear: integer('jalali_year').primaryKey(),
  lastSequence: integer('last_sequence').notNull(),
});

export type InvoiceKind = 'subscription' | 'period' | 'topup' | 'manual';
export type InvoiceStatus = 'paid' | 'unpaid' | 'cancelled';

/** The invoice holder as printed on the invoice (spec Invoice: the holder block). */
export interface InvoiceHolder {
  id: number;
  email: string;
  phone_number: string;
  name: string;
  address: string;
  birth_date: string | null;
}

export const invoices = pgTable('invoices', {
  id: serial('id').primaryKey(),
  jalaliYear: integer('jalali_year').notNull(),
  sequence: integer('sequence').notNull(),
  number: text('number').notNull(),
  userId: integer('user_id').notNull(),
  domainId: integer('domain_id'),
  domainName: text('domain_name').notNull().default(''),
  subscriptionId: integer('subscription_id'),
  paymentId: integer('payment_id'),
  kind: text('kind').$type<InvoiceKind>().notNull(),
  status: text('status').$type<InvoiceStatus>().notNull(),
  subtotalRials: rials('subtotal_rials').notNull(),
  taxRials: rials('tax_rials').notNull(),
  totalRials: rials('total_rials').notNull(),
  taxPercent: integer('tax_percent').notNull().default(0),
  holder: jsonb('holder').$type<InvoiceHolder>().notNull(),
  periodStart: ts('period_start'),
  periodEnd: ts('period_end'),
  notes: text('notes').notNull().default(''),
  issuedAt: ts('issued_at').notNull().defaultNow(),
  paidAt: ts('paid_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const invoiceItems = pgTable('invoice_items', {
  id: serial('id').primaryKey(),
  invoiceId: integer('invoice_id').notNull(),
  description: text('description').notNull(),
  quantity: rials('quantity').notNull(),
  unitPriceRials: rials('unit_price_rials').notNull(),
  totalRials: rials('total_rials').notNull(),
});

export type WalletTransactionKind = 'topup' | 'charge' | 'refund' | 'adjustment';

export const walletTransactions = pgTable('wallet_transactions', {
  id: serial('id').primaryKey(),
  userId: integer('user_id').notNull(),
  kind: text('kind').$type<WalletTransactionKind>().notNull(),
  amountRials: rials('amount_rials').notNull(),
  balanceAfterRials: rials('balance_after_rials').notNull(),
  description: text('description').notNull().default(''),
  invoiceId: integer('invoice_id'),
  paymentId: integer('payment_id'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const billingProfiles = pgTable('billing_profiles', {
  userId: integer('user_id').primaryKey(),
  phoneNumber: text('phone_number').notNull().default(''),
  address: text('address').notNull().default(''),
  birthDate: date('birth_date', { mode: 'string' }),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});
