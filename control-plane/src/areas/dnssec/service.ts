// DNSSEC of a domain through the API: turn it on (keys generated, the rollover workflow started) or off (keys
// removed), and the view GET dnssec answers (status, keys, the DS to give the registrar).
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import { changeDomain, type DomainKey, type DomainRow, type WriteTarget } from '../../config-log/index.js';
import type { Tx } from '../../db/index.js';
import { ApiError } from '../../errors.js';
import type { WorkflowStart } from '../../workflow-outbox/outbox.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import type { KeyVault } from '../ssl/key-vault.js';
import { DEFAULT_TIMINGS, rollStep, type RolloverTimings } from './rollover.js';
import { createKey, dsOf, keyFlags, readDnssec, type DnssecRow } from './store.js';

/** Temporal workflow id of a domain's rollovers. */
export const rolloverWorkflowId = (domain: string) => `dnssec-rollover:${domain}`;

export function rolloverStart(domain: string): WorkflowStart {
  return {
    kind: 'start',
    workflowType: 'rollDnssecKeys',
    workflowId: rolloverWorkflowId(domain),
    args: [{ domain }],
    conflictPolicy: 'use-existing',
  };
}

function vaultOf(target: WriteTarget): KeyVault {
  if (!target.configLog.vault) throw new Error('the config log has no key vault (createConfigLog(config))');
  return target.configLog.vault;
}

/** The domain's DNSSEC as GET dnssec shows it. */
export function present(domain: Pick<DomainRow, 'name' | 'dnsMode'>, d: DnssecRow) {
  const status: 'unavailable' | 'active' | 'disabled' =
    domain.dnsMode !== 'managed' ? 'unavailable' : d.enabled ? 'active' : 'disabled';
  const ksks = d.keys.filter((k) => k.role === 'ksk');
  return {
    enabled: d.enabled,
    status,
    algorithm: 'ECDSAP256SHA256',
    algorithm_number: 13,
    denial: 'nsec3' as const,
    // What the parent zone should hold: the KSKs named by CDS (during a KSK rollover, both).
    ds: d.enabled ? ksks.filter((k) => keyFlags(k).cds).map((k) => dsOf(domain.name, k)) : [],
    keys: d.enabled
      ? d.keys.map((k) => ({
          key_tag: k.key_tag,
          role: k.role,

          state: k.state,
          algorithm: 13,
          flags: k.role === 'ksk' ? 257 : 256,
          public_key: k.public_key,
          dnskey: `${domain.name}. 3600 IN DNSKEY ${k.role === 'ksk' ? 257 : 256} 3 13 ${k.public_key}`,
          state_since: new Date(k.state_since_ms).toISOString(),
          created_at: new Date(k.created_at_ms).toISOString(),
        }))
      : [],
  };
}

/** Turns DNSSEC on or off; on: a KSK and a ZSK when the zone has none, and the rollover workflow. */
export async function setDnssec(target: WriteTarget, key: DomainKey, enabled: boolean) {
  const vault = vaultOf(target);
  return changeDomain(target, key, async (tx, domain) => {
    const current = await readDnssec(tx, domain.id);
    if (current.enabled === enabled) return { value: present(domain, current) };
    if (enabled) {
      if (domain.dnsMode !== 'managed')
        throw new ApiError('CP_ERR_INVALID_INPUT', 'DNSSEC needs the platform to serve the zone (dns_mode managed)');
      assertNotFrozen(domain);
      await tx.execute(sql`INSERT INTO domain_dnssec (domain_id, enabled) VALUES (${domain.id}, true)
        ON CONFLICT (domain_id) DO UPDATE SET enabled = true, updated_at = now()`);
      await createKey(tx, vault, domain, 'ksk', 'active');
      await createKey(tx, vault, domain, 'zsk', 'active');
    } else {
      // Off: the zone is served unsigned at once and the keys are dropped; a DS left at the registrar makes the
      // domain fail to validate, so the API description says to remove it first.
      await tx.execute(
        sql`UPDATE domain_dnssec SET enabled = false, updated_at = now() WHERE domain_id = ${domain.id}`,
      );
      await tx.execute(sql`DELETE FROM dnssec_keys WHERE domain_id = ${domain.id}`);
    }
    const after = await readDnssec(tx, domain.id);
    return {
      value: present(domain, after),
      change: { domain: true },
      workflows: enabled ? [rolloverStart(domain.name)] : [],
    };
  });
}

export async function readDomainDnssec(tx: Tx, domain: Pick<DomainRow, 'id' | 'name' | 'dnsMode'>) {
  return present(domain, await readDnssec(tx, domain.id));
}

/**
 * One step of the rollover schedule (the workflow's activity): null when the domain is gone; `enabled` false ends
 * the workflow.
 */
export async function rollDomainKeys(
  app: Pick<FastifyInstance, 'db' | 'configLog'> & Partial<WriteTarget>,
  name: string,
  now = Date.now(),
  timings: RolloverTimings = DEFAULT_TIMINGS,
): Promise<{ enabled: boolean; next_at_ms: number | null }> {
  const vault = vaultOf(app as WriteTarget);
  return changeDomain<{ enabled: boolean; next_at_ms: number | null }>(
    app as WriteTarget,
    { name },
    async (tx, domain) => {
      const d = await readDnssec(tx, domain.id);
      if (!d.enabled || domain.dnsMode !== 'managed') return { value: { enabled: false, next_at_ms: null } };
      const step = await rollStep(tx, vault, domain, d, now, timings);
      return {
        value: { enabled: true, next_at_ms: step.nextAtMs },
        change: step.changed ? { domain: true } : undefined,
      };
    },
  );
}
