// Compiles a DomainSnapshot into a CompiledZone: RRsets by owner, delegation points, precompiled answers.
import type { DomainSnapshot } from '@platform/shared/config';
import { TYPE, TYPE_BY_NAME, PROXIED_TTL } from '../wire/constants.js';
import { parseRdata, normaliseName, ipv6Bytes } from '../wire/rdata.js';
import { MessageWriter } from '../wire/writer.js';
import type { CompiledZone, RRset, ZoneNode } from './model.js';
import { fillSlots } from './resolve.js';

export interface CompileOptions {
  /** Edge addresses proxied names answer with. */
  edgeIpv4: readonly string[];
  edgeIpv6: readonly string[];
}

export interface CompileResult {
  /** Null when the domain is not served in its state or mode (see SERVED_STATES). */
  zone: CompiledZone | null;
  /** Records skipped, each with its path: `records[3]: invalid IPv4 address "x"`. */
  problems: string[];
}

/** Domain states whose zone is answered (docs/decisions.md "Which domains the DNS server answers"). */
export const SERVED_STATES: ReadonlySet<string> = new Set(['pending', 'active', 'moved']);

const DEFAULT_SOA = { refresh: 10000, retry: 2400, expire: 604800, minimum: 300, ttl: 3600 };

/** Types whose answers depend on their own RRset alone (no chains, no additional section). */
const SELF_CONTAINED = new Set<number>([TYPE.A, TYPE.AAAA, TYPE.TXT, TYPE.CAA, TYPE.PTR]);

function selfContained(node: ZoneNode): boolean {
  if (node.cut !== '' || node.rrsets.size === 0) return false;
  for (const t of node.rrsets.keys()) if (!SELF_CONTAINED.has(t)) return false;
  return true;
}

/**
 * Compiles a snapshot. With `previous` (the zone currently served), names whose records are unchanged and whose
 * answers depend on nothing else (A, AAAA, TXT, CAA, PTR only, outside any delegation) keep their parsed RRsets and
 * precompiled answers, so a change costs about the size of what changed plus a walk over the names.
 */
export function compileZone(snapshot: DomainSnapshot, opts: CompileOptions, previous?: CompiledZone): CompileResult {
  const problems: string[] = [];
  const apex = snapshot.name.toLowerCase().replace(/\.$/, '');
  if (!SERVED_STATES.has(snapshot.state) || snapshot.dnsMode !== 'managed') return { zone: null, problems };
  const z = snapshot.zone;
  const sets = new Map<string, Map<number, RRset>>();
  const proxiedOwners = new Set<string>();
  const rrsetAt = (owner: string, type: number, ttl: number): RRset => {
    let byType = sets.get(owner);
    if (!byType) sets.set(owner, (byType = new Map()));
    let set = byType.get(type);
    if (!set) byType.set(type, (set = { type, ttl, rdatas: [], targets: [] }));
    set.ttl = Math.min(set.ttl, ttl); // RFC 2181 §5.2: one TTL per RRset
    return set;
  };

  // Owners and a signature of each owner's records, to find what is unchanged since `previous`.
  const owners = z.records.map((r) =>
    r.name === '@' || r.name === '' ? apex : normaliseName(`${r.name}.${apex}`, apex),
  );
  const signatures = new Map<string, string>();
  z.records.forEach((r, i) => {
    const owner = owners[i];
    if (owner !== null)
      signatures.set(
        owner,
        `${signatures.get(owner) ?? ''}${r.type}\t${r.ttl}\t${r.mxPriority}\t${r.proxied ? 1 : 0}\t${r.destination}\n`,
      );
  });
  const reused = new Set<string>();
  if (previous && previous.apex === apex) {
    for (const [owner, sig] of signatures) {
      const prev = previous.nodes.get(owner);
      // Same records → same parsed RRsets (the apex is rebuilt: its SOA and NS come from the zone fields).
      if (owner === apex || !prev || previous.signatures.get(owner) !== sig) continue;
      reused.add(owner);
      sets.set(owner, new Map(prev.rrsets));
    }
  }

  z.records.forEach((r, i) => {
    const type = TYPE_BY_NAME[r.type.toUpperCase()];
    const owner = owners[i];
    if (owner !== null && reused.has(owner)) return;
    if (type === undefined) {
      problems.push(`records[${i}]: unsupported type "${r.type}"`);
      return;
    }
    if (owner === null) {
      problems.push(`records[${i}]: invalid name "${r.name}"`);
      return;
    }
    if (owner === apex && type === TYPE.NS) return; // the apex NS set comes from the accepted nameservers
    if (r.proxied && (type === TYPE.A || type === TYPE.AAAA || type === TYPE.CNAME)) {
      proxiedOwners.add(owner);
      return;
    }
    const parsed = parseRdata(type, r.destination, r.mxPriority, apex);
    if (typeof parsed === 'string') {
      problems.push(`records[${i}]: ${parsed}`);
      return;
    }
    const set = rrsetAt(owner, type, Math.max(0, r.ttl || 120));
    set.rdatas.push(parsed.rdata);
    if (parsed.target !== undefined) set.targets.push(parsed.target);
  });

  // Proxied names answer with the edge addresses only, for both A and AAAA.
  for (const owner of proxiedOwners) {
    const byType = sets.get(owner);
    byType?.delete(TYPE.A);
    byType?.delete(TYPE.AAAA);
    byType?.delete(TYPE.CNAME);
    for (const ip of opts.edgeIpv4)
      rrsetAt(owner, TYPE.A, PROXIED_TTL).rdatas.push([Buffer.from(ip.split('.').map(Number))]);
    for (const ip of opts.edgeIpv6)
      rrsetAt(owner, TYPE.AAAA, PROXIED_TTL).rdatas.push([ipv6Bytes(ip) ?? Buffer.alloc(16)]);
  }

  // A CNAME owns its name alone (RFC 1034 §3.6.2); at the apex it cannot stand beside the SOA.
  for (const [owner, byType] of sets) {
    const cname = byType.get(TYPE.CNAME);
    if (!cname) continue;
    if (owner === apex) {
      byType.delete(TYPE.CNAME);
      problems.push(`${owner}: CNAME at the apex ignored`);
      continue;
    }
    if (byType.size > 1) {
      problems.push(`${owner}: CNAME beside other data; only the CNAME is served`);
      for (const t of [...byType.keys()]) if (t !== TYPE.CNAME) byType.delete(t);
    }
    if (cname.rdatas.length > 1) {
      cname.rdatas.length = 1;
      cname.targets.length = 1;
      problems.push(`${owner}: several CNAMEs; the first is served`);
    }
  }

  // Apex SOA and NS.
  const soaTtl = z.soaTtl || DEFAULT_SOA.ttl;
  const minimum = z.soaMinimum || DEFAULT_SOA.minimum;
  const nameservers = z.nameservers.map((n) => normaliseName(n, apex)).filter((n): n is string => !!n);
  const mname = normaliseName(z.soaMname || nameservers[0] || `ns1.${apex}`, apex) ?? `ns1.${apex}`;
  const rname = normaliseName(z.soaRname || `hostmaster.${apex}`, apex) ?? `hostmaster.${apex}`;
  const soaFixed = Buffer.alloc(20);
  [
    z.serial,
    z.soaRefresh || DEFAULT_SOA.refresh,
    z.soaRetry || DEFAULT_SOA.retry,
    z.soaExpire || DEFAULT_SOA.expire,
    minimum,
  ].forEach((v, i) => soaFixed.writeUInt32BE(v >>> 0, i * 4));
  const soaRdata = [{ name: mname, compress: true }, { name: rname, compress: true }, soaFixed];
  rrsetAt(apex, TYPE.SOA, soaTtl).rdatas.push(soaRdata);
  const apexNs = rrsetAt(apex, TYPE.NS, soaTtl);
  for (const ns of nameservers) {
    apexNs.rdatas.push([{ name: ns, compress: true }]);
    apexNs.targets.push(ns);
  }
  if (nameservers.length === 0) sets.get(apex)!.delete(TYPE.NS);
  const negativeSoa: RRset = { type: TYPE.SOA, ttl: Math.min(soaTtl, minimum), rdatas: [soaRdata], targets: [] };

  // Nodes, with empty non-terminals up to the apex.
  const nodes = new Map<string, ZoneNode>();
  const ensureNode = (name: string): ZoneNode => {
    let n = nodes.get(name);
    if (!n) nodes.set(name, (n = { name, rrsets: new Map(), cut: '', slots: [] }));
    return n;
  };
  for (const [owner, byType] of sets) {
    if (owner !== apex && !owner.endsWith(`.${apex}`)) {
      problems.push(`${owner}: outside the zone`);
      continue;
    }
    for (const [t, set] of byType) if (set.rdatas.length > 0) ensureNode(owner).rrsets.set(t, set);
    // Empty non-terminals up to the apex; a chain already present is complete above that point.
    ensureNode(owner);
    for (let p = owner; p !== apex;) {
      p = p.slice(p.indexOf('.') + 1);
      if (nodes.has(p)) break;
      ensureNode(p);
    }
  }
  ensureNode(apex);
  // Delegation points: NS below the apex; the topmost cut covers everything beneath it. Wildcards hang on their parent.
  const cuts = [...sets.keys()]
    .filter((o) => o !== apex && nodes.get(o)?.rrsets.has(TYPE.NS))
    .sort((a, b) => b.length - a.length);
  for (const node of nodes.values()) {
    if (node.name.startsWith('*.')) {
      const parent = nodes.get(node.name.slice(2));
      if (parent) parent.wild = node;
    }
    // Longest first, so the last match is the shortest name: the topmost cut.
    for (const cut of cuts) if (node.name === cut || node.name.endsWith(`.${cut}`)) node.cut = cut;
  }

  const zone: CompiledZone = {
    apex,
    serial: z.serial,
    nodes,
    negativeSoa,
    soaTail: soaTail(negativeSoa),
    synthesised: new Map(),
    signatures,
  };
  // Answers reused: self-contained names with the same records, then MX/SRV names whose in-zone targets are such
  // names (their additional section is unchanged). Everything else (CNAMEs, whose negative answers carry the new
  // serial, delegations, the apex) is rebuilt. compile.test.ts checks the result equals a compile from scratch.
  const sameAnswers = new Set<string>();
  const prevNode = (name: string) => (reused.has(name) ? previous!.nodes.get(name) : undefined);
  for (const node of nodes.values()) {
    const prev = prevNode(node.name);
    if (prev && selfContained(prev) && selfContained(node)) sameAnswers.add(node.name);
  }
  const targetsUnchanged = (node: ZoneNode): boolean => {
    for (const set of node.rrsets.values()) {
      if (SELF_CONTAINED.has(set.type)) continue;
      if (set.type !== TYPE.MX && set.type !== TYPE.SRV) return false;
      for (const t of set.targets) {
        if (t !== apex && !t.endsWith(`.${apex}`)) continue;
        const absentBoth = !nodes.has(t) && !previous!.nodes.has(t);
        if (!sameAnswers.has(t) && !absentBoth) return false;
      }
    }
    return true;
  };
  for (const node of nodes.values()) {
    const prev = prevNode(node.name);
    if (sameAnswers.has(node.name) || (prev && node.cut === '' && prev.cut === '' && targetsUnchanged(node)))
      node.slots = prev!.slots;
    else fillSlots(zone, node);
  }
  return { zone, problems };
}

/** The negative SOA record after its owner: names uncompressed, so it can follow any question. */
function soaTail(soa: RRset): Buffer {
  const w = new MessageWriter();
  w.u16(TYPE.SOA);
  w.u16(1);
  w.u32(soa.ttl);
  const at = w.len;
  w.u16(0);
  for (const part of soa.rdatas[0]) {
    if (Buffer.isBuffer(part)) w.bytes(part);
    else w.name(part.name, false);
  }
  w.setU16(at, w.len - at - 2);
  return w.finish();
}
