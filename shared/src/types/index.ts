// Type-only definitions shared by every package, safe to import from Temporal workflow code.
export type DnsMode = 'managed' | 'external';
export type DomainState = 'pending' | 'unverified' | 'active' | 'disabled' | 'moved' | 'banned';
export type Role = 'owner' | 'admin' | 'editor' | 'viewer';
export type Permission =
  'domain.view' | 'domain.settings' | 'domain.delete' | 'ssl.manage' | 'records.edit' | 'cache.purge';
export type RecordType = 'A' | 'AAAA' | 'CNAME' | 'MX' | 'TXT' | 'NS' | 'SRV' | 'CAA' | 'PTR';
export type Scheme = 'Http' | 'Https' | 'Auto';
export * from './request-log.js';
