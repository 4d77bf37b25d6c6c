// The zone's transfer settings from its snapshot: secondaries by address, TSIG secrets opened with the node token.
import { isIP } from 'node:net';
import { openTsigSecret, type DomainSnapshot } from '@platform/shared/config';
import { HMAC_SHA256, type TsigKeyMaterial } from './tsig.js';
import { plainAddress, type ZoneTransferConfig } from './transfer.js';

export function transfersOf(snapshot: DomainSnapshot, nodeToken: () => string): ZoneTransferConfig | null {
  const t = snapshot.transfers;
  if (!t || t.secondaries.length === 0) return null;
  const keys = new Map<string, TsigKeyMaterial>();
  for (const k of t.tsigKeys) {
    if (k.algorithm !== HMAC_SHA256) continue;
    const name = k.name.toLowerCase().replace(/\.$/, '');
    const secret = k.secret?.length
      ? Buffer.from(k.secret)
      : openTsigSecret(nodeToken(), snapshot.name, k.name, k.secretSealed);
    keys.set(name, { name, secret });
  }
  const secondaries: ZoneTransferConfig['secondaries'] = [];
  for (const s of t.secondaries) {
    if (isIP(s.address) === 0) continue;
    const key = s.tsigKey ? (keys.get(s.tsigKey.toLowerCase().replace(/\.$/, '')) ?? null) : null;
    // A secondary naming a key the zone does not have gets nothing (never an unsigned transfer instead).
    if (s.tsigKey && !key) continue;
    secondaries.push({ address: plainAddress(s.address), port: s.port || 53, key });
  }
  return { secondaries, keys };
}
