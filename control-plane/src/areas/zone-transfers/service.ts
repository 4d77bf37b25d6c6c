// Zone transfers out through the API: the domain's secondaries (IP literals, never the platform's own or internal
// networks) and TSIG keys, replaced whole by PUT. Secrets are write-only: given in the PUT, or generated and shown
// once in its answer.
import { isIP } from 'node:net';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { changeDomain, type DomainKey, type DomainRow, type WriteTarget } from '../../config-log/index.js';
import { ApiError } from '../../errors.js';
import type { AddressPolicy } from '@platform/shared/address-policy';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import type { KeyVault } from '../ssl/key-vault.js';
import { readTransfers, secretFingerprint, type TransfersRow } from './store.js';

export const MAX_SECONDARIES = 10;
export const MAX_TSIG_KEYS = 5;
export const TSIG_ALGORITHMS = ['hmac-sha256'] as const;
const KEY_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?){0,3}$/;

export interface TransfersInput {
  secondaries: Array<{ address: string; port?: number; tsig_key?: string | null }>;
  tsig_keys: Array<{ name: string; algorithm?: string; secret?: string }>;
}

export function present(row: TransfersRow) {
  return {
    secondaries: row.secondaries.map((s) => ({ address: s.address, port: s.port, tsig_key: s.tsig_key })),
    tsig_keys: row.tsig_keys.map((k) => ({ name: k.name, algorithm: k.algorithm })),
  };
}

function bad(message: string): never {
  throw new ApiError('CP_ERR_INVALID_INPUT', message);
}

/** Every rule of the body, before anything is stored. */
function check(input: TransfersInput, policy: AddressPolicy) {
  if (input.secondaries.length > MAX_SECONDARIES) bad(`at most ${MAX_SECONDARIES} secondaries per domain`);
  if (input.tsig_keys.length > MAX_TSIG_KEYS) bad(`at most ${MAX_TSIG_KEYS} TSIG keys per domain`);
  const names = new Set<string>();
  const keys = input.tsig_keys.map((k) => {
    const name = k.name.toLowerCase().replace(/\.$/, '');
    if (!KEY_NAME.test(name))
      bad(`tsig key name "${k.name}" must be a domain-style name (letters, digits, hyphens, dots)`);
    if (names.has(name)) bad(`tsig key "${name}" is listed twice`);
    names.add(name);
    const algorithm = k.algorithm ?? 'hmac-sha256';
    if (!(TSIG_ALGORITHMS as readonly string[]).includes(algorithm))
      bad(`tsig key "${name}": algorithm must be hmac-sha256`);
    let secret: Buffer | undefined;
    if (k.secret !== undefined) {
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(k.secret)) bad(`tsig key "${name}": secret must be base64`);
      secret = Buffer.from(k.secret, 'base64');
      if (secret.length < 16 || secret.length > 64) bad(`tsig key "${name}": secret must be 16 to 64 bytes`);
    }
    return { name, algorithm, secret };
  });
  const seen = new Set<string>();
  const secondaries = input.secondaries.map((s) => {
    const address = s.address
      .trim()
      .replace(/^\[|\]$/g, '')
      .toLowerCase();
    if (isIP(address) === 0 || address.includes('%')) bad(`secondary "${s.address}" must be an IPv4 or IPv6 address`);
    const port = s.port ?? 53;
    const refusal = policy.refusal(address, port);
    if (refusal) bad(`secondary ${address} is ${refusal.reason}: secondaries must be public addresses`);
    const tsigKey = s.tsig_key ? s.tsig_key.toLowerCase().replace(/\.$/, '') : null;
    if (tsigKey !== null && !names.has(tsigKey))
      bad(`secondary ${address}: tsig key "${s.tsig_key}" is not in tsig_keys`);
    const id = `${address} ${port}`;
    if (seen.has(id)) bad(`secondary ${address} port ${port} is listed twice`);
    seen.add(id);
    return { address, port, tsigKey };
  });
  return { keys, secondaries };
}

/** Replaces the domain's secondaries and keys; keys named again without a secret keep theirs. */
export async function setTransfers(target: WriteTarget, key: DomainKey, input: TransfersInput, policy: AddressPolicy) {
  const vault = vaultOf(target);
  const wanted = check(input, policy);
  return changeDomain(target, key, async (tx, domain: DomainRow) => {
    if (domain.dnsMode !== 'managed') bad('zone transfers need the platform to serve the zone (dns_mode managed)');
    assertNotFrozen(domain);
    const before = await readTransfers(tx, domain.id);
    const kept = new Map(before.tsig_keys.map((k) => [k.name, k]));
    const generated: Record<string, string> = {};
    await tx.execute(sql`DELETE FROM zone_transfer_secondaries WHERE domain_id = ${domain.id}`);
    await tx.execute(sql`DELETE FROM zone_transfer_tsig_keys WHERE domain_id = ${domain.id}`);
    for (const k of wanted.keys) {
      let sealed = kept.get(k.name)?.secret_sealed;
      if (k.secret || !sealed) {
        const secret = k.secret ?? randomBytes(32);
        if (!k.secret) generated[k.name] = secret.toString('base64');
        sealed = vault.seal(secret.toString('base64'), secretFingerprint(domain.name, k.name));
      }
      await tx.execute(sql`INSERT INTO zone_transfer_tsig_keys (domain_id, name, algorithm, secret_sealed)
        VALUES (${domain.id}, ${k.name}, ${k.algorithm}, ${sealed})`);
    }
    for (const s of wanted.secondaries)
      await tx.execute(sql`INSERT INTO zone_transfer_secondaries (domain_id, address, port, tsig_key)
        VALUES (${domain.id}, ${s.address}, ${s.port}, ${s.tsigKey})`);
    const after = await readTransfers(tx, domain.id);
    return { value: { ...present(after), generated_secrets: generated }, change: { domain: true } };
  });
}

function vaultOf(target: WriteTarget): KeyVault {
  if (!target.configLog.vault) throw new Error('the config log has no key vault (createConfigLog(config))');
  return target.configLog.vault;
}
