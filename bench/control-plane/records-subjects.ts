// The same record operations against our records API and PowerDNS's HTTP API, so a benchmark row is written once:
// each call that is timed is one HTTP request; everything around it (ids, checks, undo) is untimed.
import { expectStatus, request, type HttpResult, type Server } from './paired-runner.js';
import type { PowerDns } from './powerdns.js';

/** An A record of the benchmark's zones: `name` is relative to the zone. */
export interface ARecord {
  name: string;
  address: string;
}

export interface RecordsSubject extends Server {
  addZone(zone: string): Promise<void>;
  /** One A record created (timed). */
  createOne(zone: string, record: ARecord): Promise<HttpResult>;
  /** Many A records created in one request (timed): ours `records/import`, PowerDNS one PATCH. */
  addMany(zone: string, records: ARecord[]): Promise<HttpResult>;
  /** The ttl of existing records changed in one request (timed): ours `records/batch-update`, PowerDNS one PATCH. */
  setTtl(zone: string, records: ARecord[], ttl: number): Promise<HttpResult>;
  /** Every record of the zone (timed). */
  list(zone: string): Promise<HttpResult>;
  /** Removes records created by `createOne` or `addMany` (untimed; `answer` is what that call answered). */
  remove(zone: string, records: ARecord[], answer: HttpResult): Promise<void>;
  /** The zone's A records from a `list` answer: relative name → address and ttl. */
  aRecords(answer: HttpResult): Map<string, { address: string; ttl: number }>;
}

interface OurRecord {
  id: number;
  name: string;
  type: string;
  destination: string;
  ttl: number;
}

/** Our control plane at `apiUrl` with a full-access key; `databaseCpuMs` when the database is a separate server. */
export function ourRecordsApi(
  apiUrl: string,
  key: string,
  cpu: Pick<Server, 'cpuMs' | 'databaseCpuMs'>,
): RecordsSubject {
  const auth = { authorization: `Bearer ${key}` };
  const call = (method: string, path: string, body?: unknown) => request(`${apiUrl}${path}`, method, auth, body);
  const ids = new Map<string, Map<string, number>>(); // zone → name → id, for batch-update
  const idsOf = async (zone: string) => {
    let byName = ids.get(zone);
    if (!byName) {
      const all = JSON.parse(
        expectStatus('list', await call('GET', `/domains/${zone}/records/`), 200).body,
      ) as OurRecord[];
      byName = new Map(all.map((r) => [r.name, r.id]));
      ids.set(zone, byName);
    }
    return byName;
  };
  return {
    name: 'ours',
    ...cpu,
    async addZone(zone) {
      expectStatus(`create ${zone}`, await call('POST', '/domains/', { name: zone }), 200);
    },
    createOne: (zone, r) =>
      call('POST', `/domains/${zone}/records/`, {
        name: r.name,
        type: 'A',
        destination: r.address,
        ttl: 300,
        proxied: false,
      }),
    addMany: (zone, records) =>
      call('POST', `/domains/${zone}/records/import`, {
        zone: records.map((r) => `${r.name} 300 IN A ${r.address}`).join('\n'),
      }),
    async setTtl(zone, records, ttl) {
      const byName = await idsOf(zone);
      return call('POST', `/domains/${zone}/records/batch-update`, {
        updates: records.map((r) => ({ id: byName.get(r.name)!, ttl })),
      });
    },
    list: (zone) => call('GET', `/domains/${zone}/records/`),
    async remove(zone, records, answer) {
      const body = JSON.parse(answer.body) as OurRecord | { records: OurRecord[] };
      const created = 'records' in body ? body.records : [body];
      if (created.length !== records.length) throw new Error(`created ${created.length}, expected ${records.length}`);
      const r =
        created.length === 1
          ? await call('DELETE', `/domains/${zone}/records/${created[0]!.id}`)
          : await call('POST', `/domains/${zone}/records/delete-many`, { ids: created.map((c) => c.id) });
      expectStatus('remove', r, 200);
    },
    aRecords(answer) {
      const all = JSON.parse(answer.body) as OurRecord[];
      return new Map(
        all.filter((r) => r.type === 'A').map((r) => [r.name, { address: r.destination, ttl: r.ttl }] as const),
      );
    },
  };
}

interface PowerDnsRRset {
  name: string;
  type: string;
  ttl: number;
  records: Array<{ content: string }>;
}

/** PowerDNS's API; zones are Native, with PowerDNS's defaults (SOA-EDIT-API DEFAULT, API rectify on). */
export function powerDnsRecordsApi(pdns: PowerDns, cpuMs: () => number): RecordsSubject {
  const call = (method: string, path: string, body?: unknown) =>
    request(`${pdns.baseUrl}${path}`, method, pdns.headers, body);
  const fqdn = (name: string, zone: string) => `${name}.${zone}.`;
  const rrset = (zone: string, r: ARecord, ttl: number, changetype: 'REPLACE' | 'DELETE') => ({
    name: fqdn(r.name, zone),
    type: 'A',
    changetype,
    ...(changetype === 'REPLACE' ? { ttl, records: [{ content: r.address, disabled: false }] } : {}),
  });
  const patch = (zone: string, rrsets: unknown[]) => call('PATCH', `/zones/${zone}.`, { rrsets });
  return {
    name: 'PowerDNS',
    cpuMs,
    async addZone(zone) {
      const body = { name: `${zone}.`, kind: 'Native', nameservers: ['ns1.bench.example.', 'ns2.bench.example.'] };
      expectStatus(`create ${zone}`, await call('POST', '/zones', body), 201);
    },
    createOne: (zone, r) => patch(zone, [rrset(zone, r, 300, 'REPLACE')]),
    addMany: (zone, records) =>
      patch(
        zone,
        records.map((r) => rrset(zone, r, 300, 'REPLACE')),
      ),
    setTtl: (zone, records, ttl) =>
      patch(
        zone,
        records.map((r) => rrset(zone, r, ttl, 'REPLACE')),
      ),
    list: (zone) => call('GET', `/zones/${zone}.`),
    async remove(zone, records) {
      expectStatus(
        'remove',
        await patch(
          zone,
          records.map((r) => rrset(zone, r, 0, 'DELETE')),
        ),
        204,
      );
    },
    aRecords(answer) {
      const zone = JSON.parse(answer.body) as { name: string; rrsets: PowerDnsRRset[] };
      const suffix = `.${zone.name}`;
      return new Map(
        zone.rrsets
          .filter((s) => s.type === 'A')
          .map((s) => [s.name.slice(0, -suffix.length), { address: s.records[0]!.content, ttl: s.ttl }] as const),
      );
    },
  };
}
