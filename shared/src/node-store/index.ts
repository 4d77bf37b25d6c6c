// Node-side config: the LMDB store of domains (header, records, rules) and the client that keeps it in sync with the hub.
export {
  openNodeStore,
  type NodeStore,
  type NodeStoreDurability,
  type AppliedEvent,
  type AppliedListener,
  type ReceivedRecords,
  type DomainChange,
  wholeDomain,
  domainChange,
} from './store.js';
export { STORE_LAYOUT } from './layout.js';
export { startNodeSync, type NodeSync, type NodeSyncOptions, type NodeSyncStatus } from './sync-client.js';
