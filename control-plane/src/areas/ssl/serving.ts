// Which certificate the edge serves for each hostname: the one rule both the node snapshots and the API reads use.
import type { Certificate } from '@platform/shared/config';
import type { KeyVault } from './key-vault.js';
import type { SnapshotCertificateJson } from './store.js';
import { coveringName } from './pem.js';

export interface Candidate {
  id: number;
  source: 'uploaded' | 'issued';
  hostnames: readonly string[];
  notAfterMs: number;
  selected: boolean;
}

/**
 * For each hostname named by an unexpired certificate, the certificate that serves it: the chosen one
 * (POST ssl/certificates/{id}/choose) when it covers the name, exactly or by a `*.` wildcard; else the first that
 * lists the name exactly, else the first whose wildcard covers it, in the order uploaded before issued, newest first
 * (exact before wildcard, as the edge's SNI lookup). Returns certificate id → the hostnames it serves (names it
 * wins by wildcard after its own); certificates that serve nothing are absent. Linear in certificates × hostnames.
 */
export function servedHostnames(candidates: readonly Candidate[], nowMs: number): Map<number, string[]> {
  const live = candidates.filter((c) => c.notAfterMs > nowMs).sort(preference);
  const names = live.map((c) => new Set(c.hostnames));
  const chosen = live[0]?.selected ? 0 : -1;
  const served = new Map<number, string[]>();
  const seen = new Set<string>();
  for (const c of live) for (const h of c.hostnames) seen.add(h);
  for (const name of seen) {
    let i = chosen >= 0 && coveringName(names[chosen]!, name) !== undefined ? chosen : -1;
    if (i < 0) i = names.findIndex((set) => set.has(name));
    if (i < 0) i = names.findIndex((set) => coveringName(set, name) !== undefined);
    const winner = i < 0 ? undefined : live[i];
    if (!winner) continue;
    let list = served.get(winner.id);
    if (!list) served.set(winner.id, (list = []));
    list.push(name);
  }
  return served;
}

/** The certificate GET ssl/ describes: the first served one in the same order. */
export function primaryCertificate<C extends Candidate>(candidates: readonly C[], nowMs: number): C | undefined {
  const served = servedHostnames(candidates, nowMs);
  return candidates.filter((c) => served.has(c.id)).sort(preference)[0];
}

/** Chosen first, then uploaded before issued, then newest. */
function preference(a: Candidate, b: Candidate): number {
  return (
    Number(b.selected) - Number(a.selected) ||
    Number(b.source === 'uploaded') - Number(a.source === 'uploaded') ||
    b.id - a.id
  );
}

/**
 * The certificates a domain's snapshot carries to nodes: each one that serves a hostname, with the hostnames it
 * serves and its key sealed for nodes (never plain).
 */
export function certificatesForNodes(
  vault: KeyVault,
  domain: string,
  rows: readonly SnapshotCertificateJson[],
  nowMs: number,
): Certificate[] {
  if (rows.length === 0) return [];
  const served = servedHostnames(
    rows.map((r) => ({
      id: r.id,
      source: r.source,
      hostnames: r.hostnames,
      notAfterMs: r.not_after_ms,
      selected: r.selected,
    })),
    nowMs,
  );
  return rows
    .filter((r) => served.has(r.id))
    .map((r) =>
      vault.forNodes(domain, {
        hostnames: served.get(r.id)!,
        certificatePem: r.pem,
        sealedKey: r.key,
        fingerprint: r.fingerprint,
        notAfterMs: r.not_after_ms,
      }),
    );
}
