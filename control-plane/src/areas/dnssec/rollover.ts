// Key rollovers (RFC 6781 §4.1, RFC 7583): the schedule the rollDnssecKeys workflow (workflows/) drives. Each step
// looks at the keys' states and ages, changes what is due in one config-log entry and says when the next step is due.
// ZSK, pre-publication: a new ZSK is published, after `publishWait` it signs and the old one is retired (still
// published, for signatures cached elsewhere), and after `retireWait` the old one is removed.
// KSK, double-signature with CDS/CDNSKEY (RFC 7344, 8078): a new KSK is published and signs the key set, and CDS
// names both; after `dsWait` (parents that poll CDS have the new DS) it becomes the active one and the old one is
// retired (still signing, no longer in CDS); after another `dsWait` the old one is removed.
import { sql } from 'drizzle-orm';
import type { Tx } from '../../db/index.js';
import type { KeyVault } from '../ssl/key-vault.js';
import { createKey, type DnssecKeyRow, type DnssecRow, type KeyRole } from './store.js';

export interface RolloverTimings {
  zskLifetimeMs: number;
  kskLifetimeMs: number;
  /** A new ZSK is published this long before it signs (the DNSKEY TTL and then some). */
  publishWaitMs: number;
  /** A retired ZSK stays published this long (the longest record TTL and then some). */
  retireWaitMs: number;
  /** The time parents get to pick the new DS up from CDS, and to drop the old one. */
  dsWaitMs: number;
}

const DAY = 86_400_000;
export const DEFAULT_TIMINGS: RolloverTimings = {
  zskLifetimeMs: 90 * DAY,
  kskLifetimeMs: 365 * DAY,
  publishWaitMs: DAY,
  retireWaitMs: 2 * DAY,
  dsWaitMs: 7 * DAY,
};

export interface RollStep {
  /** Keys changed: the caller appends a config-log entry. */
  changed: boolean;
  /** When the next step is due (ms since the epoch). */
  nextAtMs: number;
}

/** Advances the rollovers of one zone at `now` (the domain row locked by the caller). */
export async function rollStep(
  tx: Tx,
  vault: KeyVault,
  domain: { id: number; name: string },
  dnssec: DnssecRow,
  now: number,
  t: RolloverTimings = DEFAULT_TIMINGS,
): Promise<RollStep> {
  let changed = false;
  const due: number[] = [];
  const setState = async (k: DnssecKeyRow, state: DnssecKeyRow['state']) => {
    await tx.execute(sql`UPDATE dnssec_keys SET state = ${state}, state_since = ${new Date(now)} WHERE id = ${k.id}`);
    changed = true;
  };
  const remove = async (k: DnssecKeyRow) => {
    await tx.execute(sql`DELETE FROM dnssec_keys WHERE id = ${k.id}`);
    changed = true;
  };
  for (const role of ['zsk', 'ksk'] as KeyRole[]) {
    const keys = dnssec.keys.filter((k) => k.role === role);
    const active = keys.filter((k) => k.state === 'active');
    const incoming = keys.find((k) => k.state === 'published');
    const lifetime = role === 'zsk' ? t.zskLifetimeMs : t.kskLifetimeMs;
    const inWait = role === 'zsk' ? t.publishWaitMs : t.dsWaitMs;
    const outWait = role === 'zsk' ? t.retireWaitMs : t.dsWaitMs;
    for (const k of keys.filter((x) => x.state === 'retired')) {
      if (now >= k.state_since_ms + outWait) await remove(k);
      else due.push(k.state_since_ms + outWait);
    }
    if (incoming) {
      if (now >= incoming.state_since_ms + inWait) {
        for (const k of active) await setState(k, 'retired');
        await setState(incoming, 'active');
        due.push(now + outWait, now + lifetime);
      } else due.push(incoming.state_since_ms + inWait);
      continue;
    }
    const current = active[0];
    if (!current) {
      // No key in the role (a key removed by hand): make one that signs at once.
      await createKey(tx, vault, domain, role, 'active');
      changed = true;
      due.push(now + lifetime);
    } else if (now >= current.state_since_ms + lifetime) {
      await createKey(tx, vault, domain, role, 'published');
      changed = true;
      due.push(now + inWait);
    } else due.push(current.state_since_ms + lifetime);
  }
  return { changed, nextAtMs: Math.max(now + 1000, Math.min(...due)) };
}
