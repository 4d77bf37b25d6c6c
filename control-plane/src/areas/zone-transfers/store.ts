// Zone transfers out in the database (migrations/0032_zone_transfers.sql): secondaries and TSIG keys, their secrets
// sealed at rest by the key vault, and the part of the snapshot nodes serve transfers with (secrets sealed for nodes).
import { sql, type SQL } from 'drizzle-orm';
import type { ZoneTransfers } from '@platform/shared/config';
import type { Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import type { KeyVault } from '../ssl/key-vault.js';

export interface TransfersRow {
  secondaries: Array<{ address: string; port: number; tsig_key: string | null }>;
  tsig_keys: Array<{ name: string; algorithm: string; secret_sealed: string }>;
}

/** What a TSIG secret is sealed at rest against: the domain and the key's name. */
export function secretFingerprint(domain: string, name: string): string {
  return `tsig:${domain}:${name}`;
}

/** The `transfers` column of snapshot.ts domainConfigColumns. */
export function snapshotTransfersSql(domainId: number): SQL {
  return sql`json_build_object(
    'secondaries', (SELECT coalesce(json_agg(json_build_object('address', address, 'port', port, 'tsig_key', tsig_key)
      ORDER BY id), '[]'::json) FROM zone_transfer_secondaries WHERE domain_id = ${domainId}),
    'tsig_keys', (SELECT coalesce(json_agg(json_build_object('name', name, 'algorithm', algorithm,
      'secret_sealed', secret_sealed) ORDER BY id), '[]'::json) FROM zone_transfer_tsig_keys WHERE domain_id = ${domainId}))`;
}

export async function readTransfers(tx: Tx, domainId: number): Promise<TransfersRow> {
  const res = await tx.execute(sql`SELECT ${snapshotTransfersSql(domainId)} AS transfers`);
  return rowsOf<{ transfers: TransfersRow }>(res)[0]!.transfers;
}

/** The snapshot's `transfers`, secrets sealed for nodes; null when the zone has no secondary. */
export function transfersForNodes(
  vault: KeyVault | undefined,
  domain: string,
  row: TransfersRow | null,
): ZoneTransfers | null {
  if (!row || row.secondaries.length === 0 || !vault) return null;
  return {
    secondaries: row.secondaries.map((s) => ({ address: s.address, port: s.port, tsigKey: s.tsig_key ?? '' })),
    tsigKeys: row.tsig_keys.map((k) => {
      const secret = Buffer.from(vault.open(k.secret_sealed, secretFingerprint(domain, k.name)), 'base64');
      return {
        name: k.name,
        algorithm: k.algorithm,
        secretSealed: vault.sealTsigForNodes(domain, k.name, secret),
        secret: new Uint8Array(0),
      };
    }),
  };
}
