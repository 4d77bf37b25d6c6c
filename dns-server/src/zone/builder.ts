// Builds a domain's CompiledZone and keeps it up to date record by record: a change recompiles only the owners it
// touched, the nodes whose existence or delegation changed with them, and the nodes whose answers read any of those
// (CNAME chains, MX/SRV/NS additional data, glue, wildcard synthesis, empty non-terminals). Everything is computed
// beside the served zone and then installed in one synchronous step, so a query sees the zone before or after.
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
import { TYPE } from '../wire/constants.js';
import { normaliseName } from '../wire/rdata.js';
import { NodeMap } from './name-index.js';
import { NO_RRSETS, SingleRRset, type RRsets } from './rrsets.js';
import { NO_SLOTS, type CompiledZone, type RRset, type Template, type ZoneNode, type ZoneView } from './model.js';
import { compileOwner, ownerOf, type CompileOptions, type OwnerContent, type OwnerRecord } from './owner.js';
import { fillSlotsReading } from './resolve.js';
import { RecordTable } from './record-table.js';
import { negativeTailOf } from './encode.js';
import { ZoneSigner, type SignedRRset } from '../dnssec/signer.js';
import { transfersOf } from '../xfr/config.js';
import { diffRecords, Journal, nodeRecords, soaCopy } from '../xfr/journal.js';
import type { ZoneRR } from '../xfr/records.js';

/** Domain states whose zone is answered (docs/decisions.md "Which domains the DNS server answers"). */
export const SERVED_STATES: ReadonlySet<string> = new Set(['pending', 'active', 'moved']);

const DEFAULT_SOA = { refresh: 10000, retry: 2400, expire: 604800, minimum: 300, ttl: 3600 };

/** The zone fields of a snapshot that shape the apex (everything but the records). */
type ZoneHeader = Omit<DomainSnapshot['zone'], 'records'>;

export interface PatchResult {
  /** 'patched': only what changed was recompiled; 'rebuilt': the zone was compiled whole (a change of the zone's
   *  header beyond its serial, or of whether it is served). */
  how: 'patched' | 'rebuilt';
  /** Problems of the records this change touched (a rebuild: of every record). */
  problems: string[];
  /** Nodes whose answers were recompiled. */
  recompiled: number;
}

export class ZoneBuilder {
  /** The zone served, or null when the domain is not answered in its state or mode. */
  zone: CompiledZone | null = null;
  private readonly apex: string;
  private header!: DomainSnapshot;
  /** The records, each with only the fields answers depend on (a large zone holds a million, most kept flat). */
  private readonly records: RecordTable;
  private readonly ownerOfRecord = (r: OwnerRecord): string | null => ownerOf(r, this.apex);
  /** The record ids of each owner: one id alone as a number (most owners), several in a Set. */
  private readonly idsByOwner = new Map<string, number | Set<number>>();
  /** Compiled records of each owner that has records. */
  private content = new Map<string, OwnerContent>();
  /** Number of child nodes of each node (a node without records exists while it has children). */
  private children = new Map<string, number>();
  /** Names each node's answers read besides itself, and the reverse: nodes whose answers read a name. */
  private readsOf = new Map<string, string[]>();
  private readers = new Map<string, Set<string>>();
  /** Nodes holding an answer that carries the zone's SOA (its serial is rewritten in place). */
  private soaUsers = new Set<string>();
  private invalidNames = new Map<number, string>();
  private soaRdata: Array<Buffer | { name: string; compress: boolean }> = [];
  /**
   * Large zones (built by inSlices): the answers of a plain node (see isPlain) are not compiled with the zone but on
   * its first query (lookupAt fills an empty slot), as for a name synthesised from a wildcard. Such a node's answers
   * read nothing but the node itself, so no later change elsewhere can make them stale, and a change of the node
   * itself replaces the node object.
   */
  private plainOnFirstQuery = false;
  private apexSets: RRset[] = [];

  constructor(
    snapshot: DomainSnapshot,
    private readonly opts: CompileOptions,
    /** False: the records are added and the zone compiled by the caller (ZoneBuilder.inSlices). */
    compile = true,
  ) {
    this.apex = snapshot.name.toLowerCase().replace(/\.$/, '');
    this.records = new RecordTable(this.apex);
    this.header = snapshot;
    if (!compile) return;
    for (const r of snapshot.zone.records) this.put(r);
    this.rebuild();
  }

  /**
   * A builder of `header`'s zone with `records` (the header's own records are ignored), compiled a slice at a time:
   * `pause` is awaited about every SLICE items, so that a large zone is compiled between the answers to other
   * queries. The zone is new and served by no one until the caller installs it, so nothing is seen half-built.
   * `records` may give the same object each time, overwritten (NodeStore.readDomain): put() keeps none. A record
   * whose id is not above every id before it replaces the one of its id (so ids given more than once: the last wins).
   * `previous`: the records of that builder are added after `records`, but for the ids `removed` or already held
   * (a delta in hand over the zone before it: its own records win).
   */
  static async inSlices(
    header: DomainSnapshot,
    records: Iterable<OwnerRecord>,
    opts: CompileOptions,
    pause: () => Promise<void>,
    previous?: { builder: ZoneBuilder; removed: ReadonlySet<number> },
  ): Promise<ZoneBuilder> {
    const b = new ZoneBuilder(header, opts, false);
    b.plainOnFirstQuery = true;
    let n = 0;
    let last = -Infinity;
    for (const r of records) {
      // Ids in increasing order (the store's, and the hub's) cannot be held yet: no lookup.
      b.put(r, undefined, r.id > last);
      if (r.id > last) last = r.id;
      if (++n % SLICE === 0) await pause();
    }
    if (previous) {
      const { records: before } = previous.builder;
      for (const id of before.keys()) {
        if (!previous.removed.has(id) && !b.records.has(id)) b.put(before.get(id)!, undefined, true);
        if (++n % SLICE === 0) await pause();
      }
    }
    const steps = b.rebuildSteps();
    while (!steps.next().done) await pause();
    return b;
  }

  /** Records held (valid or not). */
  get size(): number {
    return this.records.size;
  }

  /** Every problem of the zone's records. */
  problems(): string[] {
    const out = [...this.invalidNames.values()];
    for (const c of this.content.values()) out.push(...c.problems);
    return out;
  }

  /**
   * Applies a change: the domain's new header (a snapshot whose records are ignored), the records written (whole)
   * and the ids removed. Removals first, so an id both removed and written ends up written.
   */
  apply(header: DomainSnapshot, written: readonly ZoneRecord[], removed: readonly number[]): PatchResult {
    const touched = new Set<string>();
    for (const id of removed) this.remove(id, touched);
    for (const r of written) {
      this.remove(r.id, touched);
      this.put(r, touched);
    }
    const previous = this.header;
    this.header = header;
    if (!this.zone || !SERVED_STATES.has(header.state) || header.dnsMode !== 'managed' || !sameShape(previous, header))
      return this.rebuild();
    const result = this.patch(touched, header.zone.serial);
    this.zone.transfers = transfersOf(header, this.opts.nodeToken ?? (() => ''));
    return result;
  }

  /** Brings the zone to `snapshot` whole, recompiling only the owners whose records differ. */
  replace(snapshot: DomainSnapshot): PatchResult {
    const next = new Map(snapshot.zone.records.map((r) => [r.id, r]));
    const removed = [...this.records.keys()].filter((id) => !next.has(id));
    const written = snapshot.zone.records.filter((r) => {
      const now = this.records.get(r.id);
      return !now || !sameRecord(now, r);
    });
    return this.apply(snapshot, written, removed);
  }

  /** Keeps `r` (replacing the record of its id); `unheld`: its id is known not to be held (a zone read whole from
   *  the store, each id once), so it is not looked up first. */
  private put(r: ZoneRecord | OwnerRecord, touched?: Set<string>, unheld = false): void {
    if (!unheld && this.records.has(r.id)) this.remove(r.id, touched ?? new Set());
    const owner = ownerOf(r, this.apex);
    this.records.set(r, owner, unheld);
    if (owner === null) {
      this.invalidNames.set(r.id, `record ${r.id}: invalid name "${r.name}"`);
      return;
    }
    const ids = this.idsByOwner.get(owner);
    if (ids === undefined) this.idsByOwner.set(owner, r.id);
    else if (typeof ids === 'number') this.idsByOwner.set(owner, new Set([ids, r.id]));
    else ids.add(r.id);
    touched?.add(owner);
  }

  private remove(id: number, touched: Set<string>): void {
    const owner = this.records.delete(id, this.ownerOfRecord);
    if (owner === undefined) return;
    this.invalidNames.delete(id);
    if (owner === null) return;
    const ids = this.idsByOwner.get(owner);
    if (ids === id) this.idsByOwner.delete(owner);
    else if (typeof ids === 'object') {
      ids.delete(id);
      if (ids.size === 1) this.idsByOwner.set(owner, ids.values().next().value!);
    }
    touched.add(owner);
  }

  /** The records of an owner, in id order. */
  private recordsOf(ids: number | Set<number>): OwnerRecord[] {
    if (typeof ids === 'number') return [this.records.get(ids)!];
    return [...ids].sort((a, b) => a - b).map((id) => this.records.get(id)!);
  }

  /** Compiles the whole zone into a new CompiledZone and serves it. */
  private rebuild(): PatchResult {
    return drain(this.rebuildSteps());
  }

  /** rebuild(), pausing (yield) between slices of the work. */
  private *rebuildSteps(): Generator<void, PatchResult> {
    this.content = new Map();
    this.children = new Map();
    this.readsOf = new Map();
    this.readers = new Map();
    this.soaUsers = new Set();
    const h = this.header;
    if (!SERVED_STATES.has(h.state) || h.dnsMode !== 'managed') {
      this.zone = null;
      return { how: 'rebuilt', problems: [], recompiled: 0 };
    }
    const { negativeSoa, soaRdata, apexSets } = apexRecords(this.apex, h.zone);
    const signer = h.dnssec?.enabled
      ? new ZoneSigner(this.apex, h.dnssec, this.opts.nodeToken ?? (() => ''), negativeSoa.ttl)
      : null;
    if (signer) {
      apexSets.push(...signer.apexSets(apexSets[0].ttl));
      signer.signSet(this.apex, negativeSoa);
    }
    this.soaRdata = soaRdata;
    this.apexSets = apexSets;
    const zone: CompiledZone = {
      apex: this.apex,
      serial: h.zone.serial,
      nodes: new NodeMap(),
      negativeSoa,
      negativeTail: negativeTailOf(this.apex, [{ owner: this.apex, rrset: negativeSoa }], false),
      synthesised: new Map(),
      signer,
      transfers: transfersOf(h, this.opts.nodeToken ?? (() => '')),
      journal: new Journal(),
    };
    const previous = this.zone;
    this.zone = zone;
    try {
      const recompiled = yield* this.recompileSteps(zone, null);
      return { how: 'rebuilt', problems: this.problems(), recompiled };
    } catch (err) {
      this.zone = previous;
      throw err;
    }
  }

  /** Recompiles what `touched` owners affect, installs it, then writes a new serial into every answer holding it. */
  private patch(touched: Set<string>, serial: number): PatchResult {
    const zone = this.zone!;
    // A throw leaves the served zone whole (nothing is installed before every answer is built) but this builder's
    // bookkeeping half-updated: the caller drops the builder and builds a new one from the store.
    // Zone transfers: the change is kept as IXFR differences (old records of the nodes redone against new ones).
    const journal = zone.transfers ? (zone.journal as Journal | undefined) : undefined;
    const soaSet = this.apexSets[0] as SignedRRset;
    const oldSoa = journal ? soaCopy(this.apex, soaSet) : null;
    const oldSoaSig = soaSet.sig;
    const fromSerial = zone.serial;
    const recompiled = this.recompile(zone, touched, journal ? (this.pendingDiff = { deleted: [], added: [] }) : null);
    if (serial !== zone.serial) this.writeSerial(zone, serial);
    if (journal && oldSoa && this.pendingDiff && serial !== fromSerial) {
      const { deleted, added } = this.pendingDiff;
      if (oldSoaSig) setRecordsSig(this.apex, oldSoaSig, deleted);
      if (soaSet.sig) setRecordsSig(this.apex, soaSet.sig, added);
      journal.add({ from: fromSerial, to: serial, oldSoa, newSoa: soaCopy(this.apex, soaSet), deleted, added });
    } else journal?.clear();
    this.pendingDiff = null;
    const problems: string[] = [];
    for (const o of touched) problems.push(...(this.content.get(o)?.problems ?? []));
    return { how: 'patched', problems, recompiled };
  }

  /** Differences collected by the patch in progress (zone transfer journal), or null. */
  private pendingDiff: { deleted: ZoneRR[]; added: ZoneRR[] } | null = null;

  private recompile(
    zone: CompiledZone,
    touched: Set<string>,
    diff: { deleted: ZoneRR[]; added: ZoneRR[] } | null = null,
  ): number {
    return drain(this.recompileSteps(zone, touched, diff));
  }

  /**
   * recompile(), yielding between slices of SLICE names. Driven without pauses (drain) for a served zone, whose
   * install (step 5) must be one synchronous step; inSlices pauses only while the zone is not served yet.
   * `touched` null: the zone is compiled whole into `zone`, new and empty (rebuildSteps).
   */
  private *recompileSteps(
    zone: CompiledZone,
    touched: Iterable<string> | null,
    diff: { deleted: ZoneRR[]; added: ZoneRR[] } | null = null,
  ): Generator<void, number> {
    let n = 0;
    const apex = this.apex;
    const served = zone.nodes;
    // A zone compiled whole is served by no one yet (rebuildSteps made it): its nodes go straight into it, nothing
    // staged, and every name of the zone is affected (read from the builder's maps, not gathered into a Set). Its
    // names are read with what the maps hold for them (entries, not a lookup per name: in a large zone each lookup
    // is a cache miss or two, and they were most of the compile's time).
    const fresh = touched === null;
    const dotApex = `.${apex}`; // (made once, not once per owner)
    // 1. Owner contents, and the nodes that appear or disappear with them (empty non-terminals included).
    const affected = fresh ? undefined : new Set<string>();
    const cutChanged: string[] = [];
    for (const [owner, ids] of fresh ? ownersWithApex(apex, this.idsByOwner) : withIdsOf(touched, this.idsByOwner)) {
      if (owner !== apex && !owner.endsWith(dotApex)) continue; // outside the zone: never served
      // A fresh compile meets each owner once and has compiled none before it: it holds no content yet.
      const before = fresh ? undefined : this.content.get(owner);
      // exists() before and after the content changes (its children do not change in between).
      const parent = owner === apex || (this.children.get(owner) ?? 0) > 0;
      const existed = parent || before?.exists === true;
      const content =
        ids === undefined
          ? undefined
          : ((typeof ids === 'number' ? this.records.flatContent(ids) : undefined) ??
            compileOwner(owner, apex, this.recordsOf(ids), this.opts));
      if (content !== undefined) this.content.set(owner, content);
      else if (!fresh) this.content.delete(owner);
      affected?.add(owner);
      const now = parent || content?.exists === true;
      if (!existed && now) this.link(owner, affected);
      else if (existed && !now) this.unlink(owner, affected);
      if (owner !== apex && isCut(before) !== isCut(content)) cutChanged.push(owner);
      if (++n % SLICE === 0) yield;
    }
    // 2. A delegation that appears or goes changes the cut of every node beneath it.
    if (affected)
      for (const cut of cutChanged) {
        const suffix = `.${cut}`;
        for (const name of served.keys()) if (name.endsWith(suffix)) affected.add(name);
      }
    // 3. The nodes to recompile: those affected and every node whose answers read one of them.
    // (A patch without readers: the affected set is the whole work, not copied.)
    // (A zone compiled whole: every name of the zone, read with its content by contentOfZone.)
    let redo: Iterable<string> = [];
    if (affected && this.readers.size === 0) redo = affected;
    else if (affected) {
      const more = new Set(affected);
      for (const name of affected) for (const reader of this.readers.get(name) ?? []) more.add(reader);
      redo = more;
    }
    // 4. New node objects beside the served ones, seen through a view; answers compiled against that view (a zone
    // compiled whole: straight into it).
    const staged = new Map<string, ZoneNode | null>();
    // A zone compiled whole: the nodes whose answers are compiled now (lazy: those not plain), gathered as they are
    // made rather than read back from the zone in another pass.
    const lazy = this.plainOnFirstQuery && zone.signer === null;
    const toFill: ZoneNode[] = [];
    if (fresh) served.reserve(this.content.size + this.children.size);
    for (const [name, own] of fresh ? this.contentOfZone() : withContentOf(redo, this.content)) {
      if (this.existsWith(name, own)) {
        const node: ZoneNode = { name, rrsets: this.rrsetsOf(name, own), cut: this.cutOf(name, own), slots: NO_SLOTS };
        if (!fresh) staged.set(name, node);
        else {
          served.set(name, node);
          if (!(lazy && isPlain(node, apex))) toFill.push(node);
        }
      } else if (served.has(name)) staged.set(name, null);
      if (++n % SLICE === 0) yield;
    }
    const view: ZoneView = fresh
      ? { apex, nodes: served, negativeSoa: zone.negativeSoa, synthesised: new Map() }
      : {
          apex,
          nodes: { get: (name) => (staged.has(name) ? (staged.get(name) ?? undefined) : served.get(name)) },
          negativeSoa: zone.negativeSoa,
          synthesised: new Map(),
        };
    const built: Iterable<ZoneNode | null> = fresh ? toFill : staged.values();
    // What each new node's answers read besides itself; kept only for those that read something (most read nothing).
    const reads = new Map<string, { names: Set<string>; soa: boolean }>();
    let compiled = 0;
    for (const node of built) {
      if (node && !(lazy && isPlain(node, apex))) {
        const r = fillSlotsReading(view, node);
        r.names.delete(node.name);
        if (r.names.size > 0 || r.soa) reads.set(node.name, r);
        compiled++;
      }
      if (++n % SLICE === 0) yield;
    }
    // DNSSEC: each new RRset is signed here, once; the NSEC3 chain follows the names that changed.
    const signer = zone.signer;
    if (signer) {
      for (const [name, node] of fresh ? served : staged) {
        if (node) signer.signNode(node);
        signer.chainNode(name, node);
        if (++n % SLICE === 0) yield;
      }
      signer.link();
    }
    if (diff) {
      for (const [name, node] of staged) {
        const before: ZoneRR[] = [];
        const after: ZoneRR[] = [];
        nodeRecords(served.get(name), before);
        nodeRecords(node, after);
        diffRecords(before, after, diff.deleted, diff.added);
      }
      for (const c of signer?.chain.lastChange.removed ?? []) chainRecords(c, diff.deleted);
      for (const c of signer?.chain.lastChange.added ?? []) chainRecords(c, diff.added);
    }
    // 5. Install: plain Map writes, nothing here throws.
    for (const [name, node] of staged) {
      this.forgetReads(name);
      if (node) served.set(name, node);
      else served.delete(name);
      if (++n % SLICE === 0) yield;
    }
    for (const [name, r] of reads) this.rememberReads(name, r);
    zone.synthesised = new Map();
    return compiled;
  }

  /** Every name that may exist in the zone (a whole compile's work) with its content: the apex, every owner, every
   *  parent. */
  private *contentOfZone(): Generator<[string, OwnerContent | undefined]> {
    const apex = this.apex;
    yield [apex, this.content.get(apex)];
    for (const entry of this.content) if (entry[0] !== apex) yield entry;
    for (const name of this.children.keys()) if (name !== apex && !this.content.has(name)) yield [name, undefined];
  }

  private exists(name: string): boolean {
    return this.existsWith(name, this.content.get(name));
  }

  /** exists() with the name's content already in hand. */
  private existsWith(name: string, own: OwnerContent | undefined): boolean {
    return name === this.apex || own?.exists === true || (this.children.get(name) ?? 0) > 0;
  }

  /** `name` starts to exist: its parent counts it, and parents that did not exist become empty non-terminals. */
  private link(name: string, affected: Set<string> | undefined): void {
    affected?.add(name);
    if (name === this.apex) return;
    const parent = this.parentOf(name);
    const existed = this.exists(parent);
    this.children.set(parent, (this.children.get(parent) ?? 0) + 1);
    if (!existed) this.link(parent, affected);
  }

  /** `name` stops existing: its parent forgets it, and an empty non-terminal left without children goes too. */
  private unlink(name: string, affected: Set<string> | undefined): void {
    affected?.add(name);
    this.children.delete(name);
    if (name === this.apex) return;
    const parent = this.parentOf(name);
    const left = (this.children.get(parent) ?? 1) - 1;
    if (left > 0) this.children.set(parent, left);
    else this.children.delete(parent);
    if (!this.exists(parent)) this.unlink(parent, affected);
  }

  /** The RRsets of node `name`, given its content (`own`: this.content's). */
  private rrsetsOf(name: string, own: OwnerContent | undefined): RRsets {
    const sets = own?.exists ? own.rrsets : NO_RRSETS;
    if (name !== this.apex) return sets;
    const apexSets = new Map(sets);
    for (const set of this.apexSets) apexSets.set(set.type, set);
    return apexSets;
  }

  /** The name one label up from `name` (below or at the apex): the apex's own string when it is the apex, so that
   *  a name one label below the apex (most names of a large zone) makes no new string. */
  private parentOf(name: string): string {
    const dot = name.indexOf('.');
    return name.length - dot - 1 === this.apex.length ? this.apex : name.slice(dot + 1);
  }

  /** The topmost delegation point at or above `name` (below the apex), or '', given name's content (`own`). */
  private cutOf(name: string, own: OwnerContent | undefined): string {
    if (name.length <= this.apex.length) return '';
    let cut = isCut(own) ? name : '';
    for (let p = this.parentOf(name); p.length > this.apex.length; p = this.parentOf(p))
      if (isCut(this.content.get(p))) cut = p;
    return cut;
  }

  private forgetReads(name: string): void {
    for (const read of this.readsOf.get(name) ?? []) {
      const set = this.readers.get(read);
      set?.delete(name);
      if (set?.size === 0) this.readers.delete(read);
    }
    this.readsOf.delete(name);
    this.soaUsers.delete(name);
  }

  /** Records what `name`'s answers read besides itself (`r.names` does not hold `name`). */
  private rememberReads(name: string, r: { names: Set<string>; soa: boolean }): void {
    if (r.names.size > 0) {
      const names = [...r.names];
      this.readsOf.set(name, names);
      for (const read of names) {
        let set = this.readers.get(read);
        if (!set) this.readers.set(read, (set = new Set()));
        set.add(name);
      }
    }
    if (r.soa) this.soaUsers.add(name);
  }

  /** A new serial: written into the SOA RDATA (shared by the apex SOA and the negative SOA) and every answer holding it. */
  private writeSerial(zone: CompiledZone, serial: number): void {
    const fixed = this.soaRdata[2] as Buffer;
    fixed.writeUInt32BE(serial >>> 0, 0);
    const tail = zone.negativeTail.bytes;
    tail.writeUInt32BE(serial >>> 0, tail.length - 20);
    for (const name of this.soaUsers) {
      for (const slot of zone.nodes.get(name)?.slots ?? []) {
        if (typeof slot === 'object' && (slot as Template).soaSerialAt >= 0)
          (slot as Template).bytes.writeUInt32BE(serial >>> 0, (slot as Template).soaSerialAt);
      }
    }
    zone.serial = serial;
    const signer = zone.signer;
    if (signer) {
      // The SOA RRset changed in place: its signatures are made again, and kept answers holding it are dropped.
      const soa = this.apexSets[0] as SignedRRset;
      delete soa.sig;
      signer.signSet(this.apex, soa);
      delete (zone.negativeSoa as SignedRRset).sig;
      signer.signSet(this.apex, zone.negativeSoa);
      signer.forgetNegatives();
      for (const name of [this.apex, ...this.soaUsers]) {
        const node = zone.nodes.get(name);
        if (node) node.signed = undefined;
      }
    }
  }

  /** True when the zone's signatures are close to expiring and should be made again (resign()). */
  resignDue(now = Date.now()): boolean {
    return this.zone?.signer?.due(now) === true;
  }

  /** Signs the whole zone again with a fresh validity window. */
  resign(): PatchResult {
    return this.rebuild();
  }
}

/** Names (or records) handled between two pauses of a compile in slices. */
const SLICE = 64;

/** Runs a generator of steps to its end without pausing and returns its result. */
function drain<T>(steps: Generator<void, T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

type Ids = number | Set<number>;

/** The apex, then every other owner of `idsByOwner` (each once), each with its ids (undefined: none). */
function* ownersWithApex(apex: string, idsByOwner: Map<string, Ids>): Generator<[string, Ids | undefined]> {
  yield [apex, idsByOwner.get(apex)];
  for (const entry of idsByOwner) if (entry[0] !== apex) yield entry;
}

/** Each owner of `owners` with its ids (undefined: none). */
function* withIdsOf(owners: Iterable<string>, idsByOwner: Map<string, Ids>): Generator<[string, Ids | undefined]> {
  for (const o of owners) yield [o, idsByOwner.get(o)];
}

/** Each name of `names` with its content (undefined: none). */
function* withContentOf(
  names: Iterable<string>,
  content: Map<string, OwnerContent>,
): Generator<[string, OwnerContent | undefined]> {
  for (const name of names) yield [name, content.get(name)];
}

/** Types whose RRsets name no other node of the zone (no chain, no additional addresses). */
const PLAIN_TYPES = new Set<number>([TYPE.A, TYPE.AAAA, TYPE.TXT, TYPE.CAA, TYPE.PTR]);

/**
 * A node whose every answer reads the node alone and never the SOA: not the apex, not at or below a delegation, and
 * only RRsets of plain types (or none: an empty non-terminal). Its slots filled on first query (lookupAt) are the
 * ones fillSlots would have made: the types it holds answer their RRset, every other type is NEGATIVE.
 */
function isPlain(node: ZoneNode, apex: string): boolean {
  if (node.cut !== '' || node.name === apex) return false;
  const sets = node.rrsets;
  if (sets instanceof SingleRRset) return PLAIN_TYPES.has(sets.type);
  for (const type of sets.keys()) if (!PLAIN_TYPES.has(type)) return false;
  return true;
}

function isCut(c: OwnerContent | undefined): boolean {
  return c?.exists === true && c.rrsets.has(TYPE.NS);
}

/** True when two headers give the same apex and negative answers apart from the serial. */
function sameShape(a: DomainSnapshot, b: DomainSnapshot): boolean {
  const x = a.zone;
  const y = b.zone;
  return (
    a.name === b.name &&
    x.soaMname === y.soaMname &&
    x.soaRname === y.soaRname &&
    x.soaRefresh === y.soaRefresh &&
    x.soaRetry === y.soaRetry &&
    x.soaExpire === y.soaExpire &&
    x.soaMinimum === y.soaMinimum &&
    x.soaTtl === y.soaTtl &&
    x.nameservers.length === y.nameservers.length &&
    x.nameservers.every((n, i) => n === y.nameservers[i]) &&
    sameDnssec(a.dnssec, b.dnssec)
  );
}

/** True when two headers sign with the same keys in the same roles (a change signs the zone whole again). */
function sameDnssec(a: DomainSnapshot['dnssec'], b: DomainSnapshot['dnssec']): boolean {
  const on = (d: typeof a) => d?.enabled === true;
  if (!on(a) && !on(b)) return true;
  if (on(a) !== on(b) || a!.keys.length !== b!.keys.length) return false;
  return a!.keys.every((k, i) => {
    const o = b!.keys[i];
    return (
      k.flags === o.flags &&
      k.published === o.published &&
      k.signing === o.signing &&
      k.cds === o.cds &&
      Buffer.from(k.publicKey).equals(Buffer.from(o.publicKey))
    );
  });
}

/** The fields of a record the DNS answers depend on. */
function sameRecord(a: OwnerRecord, b: OwnerRecord): boolean {
  return (
    a.name === b.name &&
    a.type === b.type &&
    a.destination === b.destination &&
    a.ttl === b.ttl &&
    a.mxPriority === b.mxPriority &&
    a.proxied === b.proxied
  );
}

/** The apex SOA and NS RRsets and the negative SOA, from the zone header. */
function apexRecords(apex: string, z: ZoneHeader) {
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
  const apexSets: RRset[] = [{ type: TYPE.SOA, ttl: soaTtl, rdatas: [soaRdata], targets: [] }];
  if (nameservers.length > 0)
    apexSets.push({
      type: TYPE.NS,
      ttl: soaTtl,
      rdatas: nameservers.map((ns) => [{ name: ns, compress: true }]),
      targets: nameservers,
    });
  const negativeSoa: RRset = { type: TYPE.SOA, ttl: Math.min(soaTtl, minimum), rdatas: [soaRdata], targets: [] };
  return { negativeSoa, soaRdata, apexSets };
}

/** RRSIG records of a signature RRset (the SOA's), for the journal. */
function setRecordsSig(owner: string, sig: RRset, out: ZoneRR[]): void {
  for (const rdata of sig.rdatas) out.push({ owner, type: TYPE.RRSIG, ttl: sig.ttl, rdata });
}

/** An NSEC3 and its signature, for the journal. */
function chainRecords(c: { owner: string; rrset: RRset; sig: RRset | null }, out: ZoneRR[]): void {
  for (const rdata of c.rrset.rdatas) out.push({ owner: c.owner, type: TYPE.NSEC3, ttl: c.rrset.ttl, rdata });
  for (const rdata of c.sig?.rdatas ?? []) out.push({ owner: c.owner, type: TYPE.RRSIG, ttl: c.sig!.ttl, rdata });
}
