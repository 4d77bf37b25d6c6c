// TypeBox schemas of the billing reads (also the OpenAPI document). Money is integer rials.
import { Type, type TSchema } from '@sinclair/typebox';
import { BOOLEAN_FIELDS, LIMIT_FIELDS } from '../../plans/entitlements.js';
import { Id, Nullable, StringEnum } from '../../openapi/schemas.js';

const Timestamp = Type.String({ format: 'date-time' });
const Rials = Type.Integer({ description: 'rials' });
const FreeForm = Type.Object({}, { additionalProperties: true });

const featureProps: Record<string, TSchema> = { plan: Type.String() };
const overrideProps: Record<string, TSchema> = {};
for (const f of LIMIT_FIELDS) {
  featureProps[f] = Type.Integer();
  overrideProps[`override_${f}`] = Type.Optional(Type.Integer());
}
for (const f of BOOLEAN_FIELDS) {
  featureProps[f] = Type.Boolean();
  overrideProps[`override_${f}`] = Type.Optional(Type.Boolean());
}
featureProps.disabled_rule_types = Type.Array(Type.String());
overrideProps.override_disabled_rule_types = Type.Optional(
  Type.String({ description: 'A JSON array; "[]" lifts every restriction' }),
);
export const OVERRIDE_PROPS = overrideProps;

export const EffectiveFeatures = Type.Object(featureProps, { title: 'EffectiveFeatures' });

export const Subscription = Type.Object(
  {
    id: Type.Integer(),
    user_id: Type.Integer(),
    domain_id: Type.Integer(),
    domain_name: Type.String(),
    plan_id: Type.Integer(),
    plan_term_id: Nullable(Type.Integer()),
    plan: FreeForm,
    plan_term: Nullable(FreeForm),
    status: Type.String({ description: 'active, grace, expired or cancelled' }),
    started_at: Timestamp,
    expires_at: Nullable(Timestamp),
    grace_until: Nullable(Timestamp),
    auto_renew: Type.Boolean(),
    quota_reset_days: Type.Integer(),
    is_trial: Type.Boolean(),
    cancelled_at: Type.Optional(Timestamp),
    cancel_reason: Type.Optional(
      Type.String({
        description: 'System cancellations only: domain_deleted, recycled_domain_id, plan_switch, trial_ended',
      }),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
    effective_features: Type.Optional(EffectiveFeatures),
    quota_period_start: Type.Optional(Timestamp),
    quota_period_end: Type.Optional(Timestamp),
    quota_period_used_bytes: Type.Optional(Type.Integer()),
    ...overrideProps,
  },
  {
    title: 'Subscription',
    description:
      'effective_features on single reads; quota_period_start/end on single reads of active or grace subscriptions; ' +
      'quota_period_used_bytes only on GET /domains/{domain}/subscription',
  },
);

const Page = {
  page: Type.Integer({ minimum: 1 }),
  per_page: Type.Integer({ minimum: 1, maximum: 100 }),
  total_count: Type.Integer({ minimum: 0 }),
};
export const PageQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
});

export const SubscriptionList = Type.Object(
  { subscriptions: Type.Array(Subscription), ...Page },
  { title: 'SubscriptionList' },
);

export const InvoiceItem = Type.Object(
  {
    id: Type.Integer(),
    invoice_id: Type.Integer(),
    description: Type.String(),
    quantity: Type.Integer(),
    unit_price_rials: Rials,
    total_rials: Rials,
  },
  { title: 'InvoiceItem' },
);

export const Invoice = Type.Object(
  {
    id: Type.Integer(),
    number: Type.String({ description: 'sequential per Jalali year: <year>-<sequence>' }),
    user_id: Type.Integer(),
    domain_id: Nullable(Type.Integer()),
    subscription_id: Nullable(Type.Integer()),
    payment_id: Nullable(Type.Integer()),
    domain_name: Type.String(),
    kind: StringEnum(['subscription', 'period', 'topup', 'manual']),
    status: StringEnum(['paid', 'unpaid', 'cancelled']),
    subtotal_rials: Rials,
    tax_rials: Rials,
    total_rials: Rials,
    tax_percent: Type.Integer(),
    period_start: Type.Optional(Timestamp),
    period_end: Type.Optional(Timestamp),
    issued_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
    paid_at: Nullable(Timestamp),
    notes: Type.String(),
    items: Type.Array(InvoiceItem),
  },
  { title: 'Invoice' },
);

export const InvoiceList = Type.Object({ invoices: Type.Array(Invoice), ...Page }, { title: 'InvoiceList' });
export const StatementList = Type.Object(
  { statements: Type.Array(Invoice), ...Page },
  { title: 'StatementList', description: 'Traffic statements: invoices of kind period' },
);

export const InvoiceHolder = Type.Object(
  {
    id: Type.Integer(),
    email: Type.String(),
    phone_number: Type.String(),
    name: Type.String(),
    address: Type.String(),
    birth_date: Nullable(Type.String({ format: 'date' })),
  },
  { title: 'InvoiceHolder' },
);

export const Payment = Type.Object(
  {
    id: Type.Integer(),
    amount_rials: Rials,
    status: Type.String({ description: 'pending, paid or failed' }),
    gateway: Type.String(),
    authority: Type.String(),
    ref_code: Type.String(),
    ref_id: Type.String(),
    purpose: Type.String(),
    description: Type.String(),
    sandbox: Type.Boolean(),
    paid_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Payment' },
);

export const InvoiceDetail = Type.Object(
  {
    invoice: Invoice,
    user: InvoiceHolder,
    subscription: Type.Optional(Subscription),
    payment: Type.Optional(Payment),
  },
  { title: 'InvoiceDetail' },
);

export const Wallet = Type.Object(
  { user_id: Type.Integer(), balance_rials: Rials, currency: Type.Literal('IRR'), updated_at: Nullable(Timestamp) },
  { title: 'Wallet' },
);

export const WalletTransaction = Type.Object(
  {
    id: Type.Integer(),
    kind: StringEnum(['topup', 'charge', 'refund', 'adjustment']),
    amount_rials: Type.Integer({ description: 'signed: credits positive, charges negative' }),
    balance_after_rials: Rials,
    description: Type.String(),
    invoice_id: Nullable(Type.Integer()),
    payment_id: Nullable(Type.Integer()),
    created_at: Timestamp,
  },
  { title: 'WalletTransaction' },
);
export const TransactionList = Type.Object(
  { transactions: Type.Array(WalletTransaction), ...Page },
  { title: 'WalletTransactionList' },
);

export const TopupResult = Type.Object(
  { payment: Payment, invoice: Nullable(Invoice), transaction: Nullable(WalletTransaction) },
  { title: 'TopupResult' },
);

export const PlanSummary = Type.Object(
  {
    domain_id: Type.Integer(),
    domain_name: Type.String(),
    role: Type.String(),
    subscription_id: Nullable(Type.Integer()),
    plan: Nullable(Type.Object({ id: Type.Integer(), slug: Type.String(), name: Type.String() })),
    plan_term_id: Nullable(Type.Integer()),
    status: Nullable(Type.String()),
    is_trial: Type.Boolean(),
    auto_renew: Type.Boolean(),
    expires_at: Nullable(Timestamp),
    grace_until: Nullable(Timestamp),
  },
  { title: 'PlanSummary' },
);
export const PlanSummaryList = Type.Object({ domains: Type.Array(PlanSummary), ...Page }, { title: 'PlanSummaryList' });

export const TrafficUsage = Type.Object(
  {
    domain_id: Type.Integer(),
    domain_name: Type.String(),
    subscription_id: Type.Integer(),
    plan: Type.String(),
    quota_period_start: Timestamp,
    quota_period_end: Timestamp,
    used_bytes: Type.Integer(),
    included_bytes: Type.Integer({ description: 'max_traffic_gb of the effective features, in bytes' }),
    overage_bytes: Type.Integer(),
    traffic_price_rials_per_gb: Rials,
    estimated_overage_rials: Type.Integer({
      description: 'what the closed window would bill: started GB over the allowance × the price',
    }),
  },
  { title: 'TrafficUsage' },
);

export const TrafficPricing = Type.Object(
  {
    plan_id: Type.Integer(),
    slug: Type.String(),
    name: Type.String(),
    max_traffic_gb: Type.Integer(),
    traffic_price_rials_per_gb: Rials,
  },
  { title: 'TrafficPricing' },
);

export const AccountTrafficUsage = Type.Object(
  { domains: Type.Array(TrafficUsage), pricing: Type.Array(TrafficPricing), ...Page },
  { title: 'AccountTrafficUsage' },
);

export const Entitlements = Type.Object(
  {
    domain_id: Type.Integer(),
    domain_name: Type.String(),
    subscription_id: Nullable(Type.Integer()),
    plan: Type.Object({ id: Type.Integer(), slug: Type.String(), name: Type.String() }),
    effective_features: EffectiveFeatures,
    ...overrideProps,
  },
  { title: 'Entitlements' },
);

export const IdParams = Type.Object({ id: Id() });
export const DomainIdParams = Type.Object({ domain: Type.String(), id: Id() });
export const InvoiceListQuery = Type.Object({
  ...PageQuery.properties,
  kind: Type.Optional(StringEnum(['subscription', 'topup', 'manual'])),
  status: Type.Optional(StringEnum(['paid', 'unpaid', 'cancelled'])),
});
export const StatementQuery = Type.Object({
  ...PageQuery.properties,
  domain: Type.Optional(Type.String({ maxLength: 253, description: 'only this domain' })),
});
export const SubscriptionListQuery = Type.Object({
  ...PageQuery.properties,
  status: Type.Optional(StringEnum(['active', 'grace', 'expired', 'cancelled'])),
});
