// Config log: versioned per-domain snapshots appended in the change's transaction, read by the sync hub.
export { ConfigLog, createConfigLog, CONFIG_LOG_LOCK_KEY, type StoredEntry, type NudgeListener } from './config-log.js';
export { buildDomainSnapshot, buildRuleSet, SOA_TIMERS } from './snapshot.js';
