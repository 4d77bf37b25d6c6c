// The DNS record model shared by validation, storage, the API and the BIND import/export.

/** Record types the API accepts; the order is the one used in error texts and exports. */
export const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SRV', 'CAA', 'PTR'] as const;
export type RecordType = (typeof RECORD_TYPES)[number];

/** Only these types can be proxied through the edge (they resolve to an address the edge can reach). */
export const PROXIABLE_TYPES: ReadonlySet<RecordType> = new Set(['A', 'AAAA', 'CNAME']);
/** Types whose `mx_priority` field is meaningful (SRV keeps its priority there too). */
export const PRIORITY_TYPES: ReadonlySet<RecordType> = new Set(['MX', 'SRV']);

export type Scheme = 'Http' | 'Https' | 'Auto';
export type HostHeaderMode = 'own' | 'target';

export const LIMITS = {
  ttlMin: 1,
  ttlMax: 604800,
  ttlDefault: 120,
  proxiedTtl: 120,
  priorityMax: 65535,
  priorityDefault: 10,
  timeoutMin: 1,
  timeoutMax: 1800,
  timeoutDefault: 60,
  commentMax: 1024,
  txtMaxBytes: 2048,
  batchMax: 1000,
  /** Records a zone file may hold, or the domain's plan max_records when that is more. */
  importMaxRecords: 10000,
  /** Created records an import answers in full; above, only their number (records_omitted). */
  importListedRecords: 10000,
} as const;

/** A record as stored: names relative and lower case ('@' apex), destinations normalised. */
export interface RecordFields {
  name: string;
  type: RecordType;
  destination: string;
  mxPriority: number | null;
  ttl: number;
  proxied: boolean;
  captcha: boolean;
  scheme: Scheme;
  port: number;
  hostHeader: string | null;
  hostHeaderMode: HostHeaderMode;
  monitor: boolean;
  timeout: number;
  comment: string | null;
}

export interface StoredRecord extends RecordFields {
  id: number;
}

/** Optional record fields of a create or an update, in the API's snake_case. */
export interface RecordPatch {
  name?: string;
  type?: string;
  destination?: string;
  mx_priority?: number;
  ttl?: number;
  proxied?: boolean;
  captcha?: boolean;
  scheme?: string;
  port?: number;
  host_header?: string;
  host_header_mode?: string;
  monitor?: boolean;
  timeout?: number;
  comment?: string;
}

/** A create: name, type and destination are required (the route schema enforces presence). */
export interface RecordCreate extends RecordPatch {
  name: string;
  type: string;
  destination: string;
}
