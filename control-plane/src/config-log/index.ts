// Config log: versioned per-domain deltas, snapshots and tombstones appended in the change's transaction, read by the
// sync hub. Writes of what nodes serve go through changeDomain / addDomain (change-domain.ts).
export {
  ConfigLog,
  createConfigLog,
  isEmptyChange,
  CONFIG_LOG_LOCK_KEY,
  DOMAIN_CONFIG_MAX_BYTES,
  type ConfigChange,
  type ConfigLogOptions,
  type StoredEntry,
  type NudgeListener,
} from './config-log.js';
export {
  addDomain,
  changeDomain,
  type DomainKey,
  type DomainLock,
  type DomainRow,
  type DomainWrite,
  type WriteTarget,
} from './change-domain.js';
export { readDomainConfig, buildDomainSnapshot, buildZone, SOA_TIMERS } from './snapshot.js';
