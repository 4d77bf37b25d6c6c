// Admin commands of billing: what only support or payments create (plans and terms, top-ups, manual invoices,
// subscriptions, the invoice holder's details), so the billing reads can be tested and demonstrated.
import { desc, eq } from 'drizzle-orm';
import { loadConfig } from '../config.js';
import { invoices, planTerms, plans, wallets } from '../db/schema.js';
import type { CancelReason } from '../db/schema.js';
import {
  cancelLiveSubscription,
  createPlan,
  createPlanTerm,
  createSubscription,
  manualInvoice,
  setAutoRenew,
  setBillingProfile,
  topUp,
} from '../areas/billing/service.js';
import type { InvoiceItemInput } from '../areas/billing/invoices.js';
import { userByEmail } from './users.js';
import { domainByName, positionals, UsageError } from './args.js';
import type { CommandContext } from './commands.js';

export const BILLING_USAGE = `  plan create SLUG NAME [--price RIALS] [--traffic-price RIALS_PER_GB] [--like PLAN_SLUG]
  plan term-create PLAN_SLUG NAME --days N --price RIALS [--quota-reset-days N]
  plan terms
  wallet show EMAIL
  wallet topup EMAIL RIALS [--status paid|pending|failed] [--gateway NAME] [--sandbox]
  invoice create EMAIL --item 'DESCRIPTION|QUANTITY|UNIT_RIALS' … [--domain DOMAIN] [--notes TEXT] [--issued-at ISO] [--unpaid]
  invoice list EMAIL
  subscription create DOMAIN PLAN_SLUG [--term TERM_ID] [--trial] [--auto-renew] [--unpaid]
  subscription auto-renew DOMAIN on|off
  subscription cancel DOMAIN recycled_domain_id|plan_switch|trial_ended
  billing-profile set EMAIL [--phone TEXT] [--address TEXT] [--birth-date YYYY-MM-DD]`;

function int(raw: string | undefined, what: string, fallback?: number): number {
  if (raw === undefined) {
    if (fallback === undefined) throw new UsageError(`${what} is required`);
    return fallback;
  }
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(n))
    throw new UsageError(`${what} must be an integer, got "${raw}"`);
  return n;
}

const cfgOf = (ctx: CommandContext) => ctx.billing ?? loadConfig().billing;

/** `DESCRIPTION|QUANTITY|UNIT_RIALS` → an invoice item. */
export function parseItem(raw: string): InvoiceItemInput {
  const parts = raw.split('|');
  if (parts.length !== 3 || parts[0].trim() === '')
    throw new UsageError(`--item takes 'DESCRIPTION|QUANTITY|UNIT_RIALS', got "${raw}"`);
  if (parts[0].length > 500) throw new UsageError('an item description may be at most 500 characters');
  return {
    description: parts[0].trim(),
    quantity: int(parts[1], 'QUANTITY'),
    unitPriceRials: int(parts[2], 'UNIT_RIALS'),
  };
}

const CANCEL_REASONS: readonly CancelReason[] = ['recycled_domain_id', 'plan_switch', 'trial_ended'];

export const BILLING_COMMANDS: Record<string, (ctx: CommandContext, args: string[]) => Promise<void>> = {
  async 'plan create'(ctx, args) {
    const { pos, values } = positionals(args, ['SLUG', 'NAME'], {
      price: { type: 'string' },
      'traffic-price': { type: 'string' },
      like: { type: 'string' },
    });
    const plan = await createPlan(ctx.db, {
      slug: pos[0],
      name: pos[1],
      priceRials: int(values.price as string | undefined, '--price', 0),
      trafficPriceRialsPerGb: int(values['traffic-price'] as string | undefined, '--traffic-price', 0),
      like: (values.like as string | undefined) ?? 'free',
    });
    ctx.out(`created plan ${plan.slug} (id ${plan.id})`);
  },
  async 'plan term-create'(ctx, args) {
    const { pos, values } = positionals(args, ['PLAN_SLUG', 'NAME'], {
      days: { type: 'string' },
      price: { type: 'string' },
      'quota-reset-days': { type: 'string' },
    });
    const term = await createPlanTerm(ctx.db, pos[0], {
      name: pos[1],
      durationDays: int(values.days as string | undefined, '--days'),
      priceRials: int(values.price as string | undefined, '--price'),
      quotaResetDays: int(values['quota-reset-days'] as string | undefined, '--quota-reset-days', 30),
    });
    ctx.out(`created plan term ${term.id} (${pos[0]} ${term.name})`);
  },
  async 'plan terms'(ctx, args) {
    positionals(args, []);
    const rows = await ctx.db
      .select({ term: planTerms, slug: plans.slug })
      .from(planTerms)
      .innerJoin(plans, eq(plans.id, planTerms.planId))
      .orderBy(planTerms.id);
    ctx.out('id\tplan\tname\tdays\tprice_rials\tquota_reset_days');
    for (const { term, slug } of rows)
      ctx.out([term.id, slug, term.name, term.durationDays, term.priceRials, term.quotaResetDays].join('\t'));
  },
  async 'wallet show'(ctx, args) {
    const { pos } = positionals(args, ['EMAIL']);
    const user = await userByEmail(ctx.db, pos[0]);
    const [w] = await ctx.db.select().from(wallets).where(eq(wallets.userId, user.id));
    ctx.out(`${user.email}: ${w?.balanceRials ?? 0} rials`);
  },
  async 'wallet topup'(ctx, args) {
    const { pos, values } = positionals(args, ['EMAIL', 'RIALS'], {
      status: { type: 'string' },
      gateway: { type: 'string' },
      sandbox: { type: 'boolean' },
    });
    const status = (values.status as string | undefined) ?? 'paid';
    if (status !== 'paid' && status !== 'pending' && status !== 'failed')
      throw new UsageError('--status must be paid, pending or failed');
    const user = await userByEmail(ctx.db, pos[0]);
    const r = await topUp(ctx.db, cfgOf(ctx), user.id, int(pos[1], 'RIALS'), {
      status,
      gateway: (values.gateway as string | undefined) ?? 'admin',
      sandbox: values.sandbox === true,
    });
    ctx.out(
      `payment ${r.payment.id} ${r.payment.status}, invoice ${r.invoice.number} (id ${r.invoice.id})` +
        (r.transaction ? `, balance ${r.transaction.balanceAfterRials} rials` : ''),
    );
  },
  async 'invoice create'(ctx, args) {
    const { pos, values } = positionals(args, ['EMAIL'], {
      item: { type: 'string', multiple: true },
      domain: { type: 'string' },
      notes: { type: 'string' },
      'issued-at': { type: 'string' },
      unpaid: { type: 'boolean' },
    });
    const items = ((values.item as unknown as string[] | undefined) ?? []).map(parseItem);
    if (items.length === 0) throw new UsageError('give at least one --item');
    if (items.length > 100) throw new UsageError('an invoice may hold at most 100 items');
    const rawAt = values['issued-at'] as string | undefined;
    const issuedAt = rawAt === undefined ? undefined : new Date(rawAt);
    if (issuedAt && Number.isNaN(issuedAt.getTime())) throw new UsageError(`--issued-at is not a time: "${rawAt}"`);
    const user = await userByEmail(ctx.db, pos[0]);
    const domain = values.domain ? await domainByName(ctx.db, values.domain as string) : undefined;
    const inv = await manualInvoice(ctx.db, cfgOf(ctx), user.id, {
      items,
      domain,
      notes: values.notes as string | undefined,
      issuedAt,
      status: values.unpaid === true ? 'unpaid' : 'paid',
    });
    ctx.out(
      `invoice ${inv.number} (id ${inv.id}): ${inv.subtotalRials} + VAT ${inv.taxRials} = ${inv.totalRials} rials`,
    );
  },
  async 'invoice list'(ctx, args) {
    const { pos } = positionals(args, ['EMAIL']);
    const user = await userByEmail(ctx.db, pos[0]);
    ctx.out('id\tnumber\tkind\tstatus\ttotal_rials\tdomain\tissued_at');
    const rows = await ctx.db.select().from(invoices).where(eq(invoices.userId, user.id)).orderBy(desc(invoices.id));
    for (const i of rows)
      ctx.out(
        [i.id, i.number, i.kind, i.status, i.totalRials, i.domainName || '-', i.issuedAt.toISOString()].join('\t'),
      );
  },
  async 'subscription create'(ctx, args) {
    const { pos, values } = positionals(args, ['DOMAIN', 'PLAN_SLUG'], {
      term: { type: 'string' },
      trial: { type: 'boolean' },
      'auto-renew': { type: 'boolean' },
      unpaid: { type: 'boolean' },
    });
    const domain = await domainByName(ctx.db, pos[0]);
    const r = await createSubscription(ctx, cfgOf(ctx), domain.id, {
      planSlug: pos[1],
      termId: values.term === undefined ? undefined : int(values.term as string, '--term'),
      trial: values.trial === true,
      autoRenew: values['auto-renew'] === true,
      unpaid: values.unpaid === true,
    });
    const s = r.subscription;
    ctx.out(
      `subscription ${s.id}: ${domain.name} on ${pos[1]}${s.isTrial ? ' (trial)' : ''} until ` +
        `${s.expiresAt?.toISOString() ?? 'no end'}${r.invoiceNumber ? `, invoice ${r.invoiceNumber}` : ''}`,
    );
  },
  async 'subscription auto-renew'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN', 'on|off']);
    if (pos[1] !== 'on' && pos[1] !== 'off') throw new UsageError('give on or off');
    const domain = await domainByName(ctx.db, pos[0]);
    const s = await setAutoRenew(ctx.db, domain.id, pos[1] === 'on');
    ctx.out(`subscription ${s.id} of ${domain.name}: auto-renew ${pos[1]}`);
  },
  async 'subscription cancel'(ctx, args) {
    const { pos } = positionals(args, ['DOMAIN', 'REASON']);
    if (!CANCEL_REASONS.includes(pos[1] as CancelReason))
      throw new UsageError(`REASON must be one of ${CANCEL_REASONS.join(', ')} (domain_deleted: delete the domain)`);
    const domain = await domainByName(ctx.db, pos[0]);
    await cancelLiveSubscription(ctx, domain.id, pos[1] as CancelReason);
    ctx.out(`${domain.name}: subscription cancelled (${pos[1]}); the domain is on the free plan`);
  },
  async 'billing-profile set'(ctx, args) {
    const { pos, values } = positionals(args, ['EMAIL'], {
      phone: { type: 'string' },
      address: { type: 'string' },
      'birth-date': { type: 'string' },
    });
    const user = await userByEmail(ctx.db, pos[0]);
    await setBillingProfile(ctx.db, user.id, {
      ...(values.phone !== undefined ? { phoneNumber: values.phone as string } : {}),
      ...(values.address !== undefined ? { address: values.address as string } : {}),
      ...(values['birth-date'] !== undefined ? { birthDate: values['birth-date'] as string } : {}),
    });
    ctx.out(`billing profile of ${user.email} updated`);
  },
};
