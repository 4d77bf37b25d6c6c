-- Billing (issue 16 item 3): plan terms, wallets and their transactions, payments behind top-ups, invoices numbered
-- per Jalali year, and what the subscription lifecycle needs on subscriptions. Money is in integer rials.

-- Traffic over a plan's allowance (max_traffic_gb per quota window) is metered at this price per started GB and
-- billed by a `period` invoice when the window closes; 0: not metered.
ALTER TABLE plans ADD COLUMN traffic_price_rials_per_gb bigint NOT NULL DEFAULT 0
  CHECK (traffic_price_rials_per_gb >= 0);
UPDATE plans SET traffic_price_rials_per_gb = 15000 WHERE slug = 'pro';
UPDATE plans SET traffic_price_rials_per_gb = 12000 WHERE slug = 'business';
UPDATE plans SET traffic_price_rials_per_gb = 10000 WHERE slug = 'enterprise';

-- A billed term of a plan: its length, price and the allowance reset cadence it freezes into a subscription.
CREATE TABLE plan_terms (
  id                serial PRIMARY KEY,
  plan_id           integer NOT NULL REFERENCES plans(id),
  name              text NOT NULL,
  duration_days     integer NOT NULL CHECK (duration_days BETWEEN 1 AND 3660),
  price_rials       bigint NOT NULL CHECK (price_rials >= 0),
  quota_reset_days  integer NOT NULL DEFAULT 30 CHECK (quota_reset_days BETWEEN 1 AND 366),
  active            boolean NOT NULL DEFAULT true,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX plan_terms_plan_idx ON plan_terms(plan_id);

ALTER TABLE subscriptions ADD COLUMN plan_term_id integer REFERENCES plan_terms(id);
ALTER TABLE subscriptions ADD COLUMN grace_until timestamptz;
ALTER TABLE subscriptions ADD COLUMN quota_reset_days integer NOT NULL DEFAULT 30
  CHECK (quota_reset_days BETWEEN 1 AND 366);
-- End of the last quota window a period invoice was judged for (the lifecycle never bills a window twice).
ALTER TABLE subscriptions ADD COLUMN metered_until timestamptz;
CREATE INDEX subscriptions_user_idx ON subscriptions(user_id);

-- One wallet per account; the balance never goes below zero.
CREATE TABLE wallets (
  user_id        integer PRIMARY KEY REFERENCES users(id),
  balance_rials  bigint NOT NULL DEFAULT 0 CHECK (balance_rials >= 0),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

-- Payments (spec Payment): the gateway's side of a top-up.
CREATE TABLE payments (
  id            serial PRIMARY KEY,
  user_id       integer NOT NULL REFERENCES users(id),
  amount_rials  bigint NOT NULL CHECK (amount_rials > 0),
  status        text NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
  gateway       text NOT NULL DEFAULT '',
  authority     text NOT NULL DEFAULT '',
  ref_code      text NOT NULL DEFAULT '',
  ref_id        text NOT NULL DEFAULT '',
  purpose       text NOT NULL DEFAULT 'topup',
  description   text NOT NULL DEFAULT '',
  sandbox       boolean NOT NULL DEFAULT false,
  paid_at       timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_user_idx ON payments(user_id);

-- The next invoice sequence of each Jalali year, drawn under the row's lock in the invoice's own transaction.
CREATE TABLE invoice_counters (
  jalali_year    integer PRIMARY KEY,
  last_sequence  integer NOT NULL
);

CREATE TABLE invoices (
  id               serial PRIMARY KEY,
  jalali_year      integer NOT NULL,
  sequence         integer NOT NULL,
  number           text NOT NULL UNIQUE,
  user_id          integer NOT NULL REFERENCES users(id),
  domain_id        integer,                     -- no foreign key: invoices outlive their domain
  domain_name      text NOT NULL DEFAULT '',
  subscription_id  integer REFERENCES subscriptions(id),
  payment_id       integer REFERENCES payments(id),
  kind             text NOT NULL CHECK (kind IN ('subscription', 'period', 'topup', 'manual')),
  status           text NOT NULL CHECK (status IN ('paid', 'unpaid', 'cancelled')),
  subtotal_rials   bigint NOT NULL CHECK (subtotal_rials >= 0),
  tax_rials        bigint NOT NULL CHECK (tax_rials >= 0),
  total_rials      bigint NOT NULL CHECK (total_rials = subtotal_rials + tax_rials),
  tax_percent      integer NOT NULL DEFAULT 0,
  holder           jsonb NOT NULL,              -- the invoice holder as printed: id, email, phone_number, name, address, birth_date
  period_start     timestamptz,                 -- period invoices: the quota window billed
  period_end       timestamptz,
  notes            text NOT NULL DEFAULT '',
  issued_at        timestamptz NOT NULL DEFAULT now(),
  paid_at          timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (jalali_year, sequence)
);
CREATE INDEX invoices_user_idx ON invoices(user_id, id);
CREATE INDEX invoices_domain_idx ON invoices(domain_id, id);
CREATE UNIQUE INDEX invoices_period_idx ON invoices(subscription_id, period_start) WHERE kind = 'period';

CREATE TABLE invoice_items (
  id                serial PRIMARY KEY,
  invoice_id        integer NOT NULL REFERENCES invoices(id) ON DELETE CASCADE,
  description       text NOT NULL,
  quantity          bigint NOT NULL CHECK (quantity > 0),
  unit_price_rials  bigint NOT NULL CHECK (unit_price_rials >= 0),
  total_rials       bigint NOT NULL
);
CREATE INDEX invoice_items_invoice_idx ON invoice_items(invoice_id);

-- Every change of a wallet: top-ups credit, renewals and metered traffic debit (amount signed).
CREATE TABLE wallet_transactions (
  id                   serial PRIMARY KEY,
  user_id              integer NOT NULL REFERENCES users(id),
  kind                 text NOT NULL CHECK (kind IN ('topup', 'charge', 'refund', 'adjustment')),
  amount_rials         bigint NOT NULL,
  balance_after_rials  bigint NOT NULL CHECK (balance_after_rials >= 0),
  description          text NOT NULL DEFAULT '',
  invoice_id           integer REFERENCES invoices(id),
  payment_id           integer REFERENCES payments(id),
  created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wallet_transactions_user_idx ON wallet_transactions(user_id, id);

-- The invoice holder's details printed on invoices beside users.email and users.name (set by support).
CREATE TABLE billing_profiles (
  user_id       integer PRIMARY KEY REFERENCES users(id),
  phone_number  text NOT NULL DEFAULT '',
  address       text NOT NULL DEFAULT '',
  birth_date    date,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
