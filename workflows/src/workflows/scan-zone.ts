// Zone scan of a new managed domain (id `zone-scan:<domain>`): existing records are read through the public
// resolvers and imported, so the zone answers the same once the delegation moves to us.
import { background } from './proxies.js';

export async function scanAndImportZone(input: {
  domain: string;
}): Promise<{ found: number; imported: number; skipped: number } | null> {
  const records = await background.scanZone(input.domain);
  const reply = await background.importRecords(input.domain, records);
  if (!reply) return null;
  return { found: records.length, ...reply };
}
