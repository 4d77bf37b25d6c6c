// Config log: versioned per-domain snapshots appended in the change's transaction, read by the sync hub.
export {
  ConfigLog,
  createConfigLog,
  isEmptyChange,
  CONFIG_LOG_LOCK_KEY,
  type ConfigChange,
  type StoredEntry,
  type NudgeListener,
} from './config-log.js';
export { buildDomainSnapshot, buildRuleSet, SOA_TIMERS } from './snapshot.js';
