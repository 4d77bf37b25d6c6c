// DNSSEC of a managed zone in the database (migrations/0032_dnssec.sql): the switch, the keys (private halves sealed
// at rest by the key vault), the part of the snapshot nodes sign with (private halves sealed under the node token).
import { sql, type SQL } from 'drizzle-orm';
import {
  DNSKEY_FLAGS_KSK,
  DNSKEY_FLAGS_ZSK,
  DNSSEC_ALGORITHM,
  dnskeyRdata,
  dsDigest,
  generateDnssecKey,
  keyTag,
  type Dnssec,
} from '@platform/shared/config';
import type { Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import type { KeyVault } from '../ssl/key-vault.js';

export type KeyRole = 'ksk' | 'zsk';
export type KeyState = 'published' | 'active' | 'retired';

export interface DnssecKeyRow {
  id: number;
  role: KeyRole;
  algorithm: number;
  public_key: string;
  private_key_sealed: string;
  key_tag: number;
  state: KeyState;
  state_since_ms: number;
  created_at_ms: number;
}

export interface DnssecRow {
  enabled: boolean;
  keys: DnssecKeyRow[];
}

/** What a key's private half is sealed at rest against: the domain and the public half. */
function fingerprint(domain: string, publicKey: string): string {
  return `dnssec:${domain}:${publicKey}`;
}

const KEY_JSON = sql`json_build_object('id', id, 'role', role, 'algorithm', algorithm, 'public_key', public_key,
  'private_key_sealed', private_key_sealed, 'key_tag', key_tag, 'state', state,
  'state_since_ms', (extract(epoch FROM state_since) * 1000)::float8,
  'created_at_ms', (extract(epoch FROM created_at) * 1000)::float8)`;

/** The `dnssec` column of snapshot.ts domainConfigColumns: the switch and the keys (null when never enabled). */
export function snapshotDnssecSql(domainId: number): SQL {
  return sql`(SELECT json_build_object('enabled', d.enabled, 'keys', (SELECT coalesce(json_agg(${KEY_JSON} ORDER BY id),
      '[]'::json) FROM dnssec_keys WHERE domain_id = ${domainId})) FROM domain_dnssec d WHERE d.domain_id = ${domainId})`;
}

export async function readDnssec(tx: Tx, domainId: number): Promise<DnssecRow> {
  const res = await tx.execute(sql`SELECT ${snapshotDnssecSql(domainId)} AS dnssec`);
  const row = rowsOf<{ dnssec: DnssecRow | null }>(res)[0]?.dnssec;
  return row ?? { enabled: false, keys: [] };
}

/** What the zone publishes and signs with for a key in its state (signer.ts on the nodes reads these). */
export function keyFlags(k: Pick<DnssecKeyRow, 'role' | 'state'>): {
  published: boolean;
  signing: boolean;
  cds: boolean;
} {
  if (k.role === 'zsk') return { published: true, signing: k.state === 'active', cds: false };
  return { published: true, signing: true, cds: k.state !== 'retired' };
}

/** The snapshot's `dnssec`: each key with its private half sealed for nodes; null when DNSSEC is off. */
export function dnssecForNodes(vault: KeyVault | undefined, domain: string, row: DnssecRow | null): Dnssec | null {
  if (!row?.enabled || !vault) return null;
  return {
    enabled: true,
    keys: row.keys.map((k) => {
      const publicKey = Buffer.from(k.public_key, 'base64');
      const flags = keyFlags(k);
      const der = flags.signing
        ? Buffer.from(vault.open(k.private_key_sealed, fingerprint(domain, k.public_key)), 'base64')
        : null;
      return {
        flags: k.role === 'ksk' ? DNSKEY_FLAGS_KSK : DNSKEY_FLAGS_ZSK,
        algorithm: DNSSEC_ALGORITHM,
        publicKey,
        privateKeySealed: der ? vault.sealForNodes(domain, publicKey, der) : new Uint8Array(0),
        privateKeyDer: new Uint8Array(0),
        ...flags,
      };
    }),
  };
}

/** Generates a key and stores it (private half sealed) in `state`. */
export async function createKey(
  tx: Tx,
  vault: KeyVault,
  domain: { id: number; name: string },
  role: KeyRole,
  state: KeyState,
): Promise<void> {
  const { publicKey, privateKeyDer } = generateDnssecKey();
  const pub = publicKey.toString('base64');
  const sealed = vault.seal(privateKeyDer.toString('base64'), fingerprint(domain.name, pub));
  const tag = keyTag(dnskeyRdata(role === 'ksk' ? DNSKEY_FLAGS_KSK : DNSKEY_FLAGS_ZSK, publicKey));
  await tx.execute(sql`INSERT INTO dnssec_keys (domain_id, role, public_key, private_key_sealed, key_tag, state)
    VALUES (${domain.id}, ${role}, ${pub}, ${sealed}, ${tag}, ${state})`);
}

/** The DS record of a KSK as the registrar wants it (digest type 2, SHA-256). */
export function dsOf(domain: string, k: Pick<DnssecKeyRow, 'public_key' | 'key_tag'>) {
  const rdata = dnskeyRdata(DNSKEY_FLAGS_KSK, Buffer.from(k.public_key, 'base64'));
  const digest = dsDigest(domain, rdata).toString('hex').toUpperCase();
  return {
    key_tag: k.key_tag,
    algorithm: DNSSEC_ALGORITHM,
    digest_type: 2,
    digest,
    record: `${domain}. 3600 IN DS ${k.key_tag} ${DNSSEC_ALGORITHM} 2 ${digest}`,
  };
}
