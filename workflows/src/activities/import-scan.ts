// Activities of the import scan (workflows/import-scan.ts) and the proxied re-check: the domain's nameservers'
// addresses through the public resolvers (DNS_RESOLVERS), a zone transfer from each address the platform may reach
// (AddressPolicy: no loopback, private, link-local … address unless ALLOWED_PRIVATE_NETWORKS lists it, never an
// endpoint of the platform), and the session's reports to the control plane.
import { AddressPolicy } from '@platform/shared/address-policy';
import type { IpRange } from '@platform/shared/address-policy';
import type { Resolver } from '../config.js';
import type { ScannedRecord, ScanNameserver, ScanProgress } from '../types.js';
import { transferZone, type AxfrAnswer } from './axfr.js';
import { controlPlanePost, type ControlPlaneDeps } from './control-plane.js';
import { norm, observe, pool, scannedRecord, TYPE_NAMES, type DnsDeps } from './dns-lookup.js';

/** The most records a scan brings (the control plane's bound of an import session). */
export const SCAN_MAX_RECORDS = 10_000;
/** Nameservers and addresses per nameserver asked; a delegation longer than this is cut. */
export const SCAN_MAX_NAMESERVERS = 8;
export const SCAN_MAX_ADDRESSES = 4;
const AXFR_TIMEOUT_MS = 20_000;
/** The whole of the transfer attempts (every address) ends by then. */
const AXFR_BUDGET_MS = 60_000;
const AXFR_MAX_BYTES = 32 * 1024 * 1024;

export interface ImportScanDeps extends DnsDeps, ControlPlaneDeps {
  allowedPrivateNetworks: readonly IpRange[];
  axfrPort: number;
  /** Endpoints of the platform (our DNS nodes, the control plane): never asked for a tenant's zone. */
  own: Resolver[];
}

const IMPORTED = new Set(['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SRV', 'CAA', 'PTR']);

/** One transferred record as the records API takes it; undefined for what the platform manages or cannot hold. */
export function scannedOf(zone: string, rr: AxfrAnswer): ScannedRecord | undefined {
  const name = norm(rr.name);
  if (name !== zone && !name.endsWith(`.${zone}`)) return undefined;
  const type = TYPE_NAMES.get(rr.type);
  if (!type || !IMPORTED.has(type)) return undefined; // SOA, DNSSEC records (signed anew here), unknown types
  const label = name === zone ? '@' : name.slice(0, -(zone.length + 1));
  if (label === '@' && type === 'NS') return undefined; // the apex NS set becomes the platform's
  return scannedRecord(label, type, rr);
}

/** The A and AAAA addresses the resolvers give for `name`, in that order, and their errors but NXDOMAIN. */
async function addressesOf(deps: DnsDeps, name: string): Promise<{ addresses: Set<string>; errors: string[] }> {
  const addresses = new Set<string>();
  const errors: string[] = [];
  for (const type of ['A', 'AAAA'])
    for (const o of await observe(deps, name, type)) {
      for (const v of o.values) addresses.add(v);
      if (o.error && o.error !== 'NXDOMAIN') errors.push(`${o.resolver}: ${o.error}`);
    }
  return { addresses, errors };
}

export function createImportScanActivities(deps: ImportScanDeps) {
  const policy = new AddressPolicy(deps.allowedPrivateNetworks);
  for (const o of deps.own) policy.addOwn({ address: o.host, port: o.port });
  const post = controlPlanePost(deps);
  const s = (id: number) => `/internal/import-sessions/${id}`;

  return {
    /** The addresses (A, then AAAA) the resolvers give for each nameserver name. */
    async nameserverAddresses(names: string[]): Promise<{ name: string; addresses: string[] }[]> {
      return Promise.all(
        names.slice(0, SCAN_MAX_NAMESERVERS).map(async (name) => {
          const { addresses } = await addressesOf(deps, name);
          return { name, addresses: [...addresses].slice(0, SCAN_MAX_ADDRESSES) };
        }),
      );
    },

    /**
     * Asks each nameserver address in turn for a zone transfer, skipping the addresses the platform may not reach;
     * the first complete transfer wins. `tooLarge`: a transfer past the bounds (the scan fails rather than import a
     * part of the zone).
     */
    async transferFromNameservers(
      zone: string,
      nameservers: ScanNameserver[],
    ): Promise<{ records: ScannedRecord[] | null; nameservers: ScanNameserver[]; tooLarge?: string }> {
      const out: ScanNameserver[] = [];
      const end = Date.now() + AXFR_BUDGET_MS;
      let records: ScannedRecord[] | null = null;
      let tooLarge: string | undefined;
      for (const ns of nameservers) {
        if (!ns.address) {
          out.push({ ...ns, result: 'no address' });
          continue;
        }
        if (records || tooLarge) {
          out.push({ ...ns, result: 'not asked' });
          continue;
        }
        const refusal = policy.refusal(ns.address, deps.axfrPort);
        if (refusal) {
          out.push({ ...ns, result: `not asked: ${ns.address} is ${refusal.reason}` });
          continue;
        }
        const left = end - Date.now();
        if (left <= 0) {
          out.push({ ...ns, result: 'not asked: the time for zone transfers is used up' });
          continue;
        }
        const got = await transferZone(zone, ns.address, deps.axfrPort, {
          timeoutMs: Math.min(AXFR_TIMEOUT_MS, left),
          maxRecords: SCAN_MAX_RECORDS,
          maxBytes: AXFR_MAX_BYTES,
        });
        if (!got.ok) {
          if (got.tooLarge) tooLarge = got.error;
          out.push({ ...ns, result: `no transfer: ${got.error}` });
          continue;
        }
        const found: ScannedRecord[] = [];
        for (const rr of got.records) {
          const rec = scannedOf(zone, rr);
          if (rec) found.push(rec);
        }
        records = found;
        out.push({ ...ns, result: `transferred ${got.records.length} records` });
      }
      return { records, nameservers: out, ...(tooLarge ? { tooLarge } : {}) };
    },

    /** The A and AAAA addresses the resolvers give for each hostname (the proxied re-check). */
    async lookupHostAddresses(
      hostnames: string[],
    ): Promise<{ hostname: string; addresses: string[]; error?: string }[]> {
      const out: { hostname: string; addresses: string[]; error?: string }[] = [];
      await pool(hostnames, 8, async (hostname) => {
        const { addresses, errors } = await addressesOf(deps, hostname);
        out.push({
          hostname,
          addresses: [...addresses].sort(),
          ...(addresses.size === 0 && errors.length ? { error: `no answer (${errors[0]})` } : {}),
        });
      });
      return out;
    },

    /** The session's status after the report: anything but `scanning` (or null: gone) stops the scan. */
    async reportImportProgress(sessionId: number, progress: ScanProgress): Promise<string | null> {
      return (await post<{ status: string }>(`${s(sessionId)}/progress`, { progress }))?.status ?? null;
    },
    async reportImportScan(
      sessionId: number,
      scan: { records: ScannedRecord[]; progress: ScanProgress },
    ): Promise<string | null> {
      return (await post<{ status: string }>(`${s(sessionId)}/scanned`, scan))?.status ?? null;
    },
    async reportImportFailed(sessionId: number, error: string): Promise<string | null> {
      return (await post<{ status: string }>(`${s(sessionId)}/failed`, { error }))?.status ?? null;
    },
  };
}
