// Node-side config: the LMDB store of domain snapshots and the client that keeps it in sync with the hub.
export { openNodeStore, type NodeStore, type AppliedEvent, type AppliedListener } from './store.js';
export { startNodeSync, type NodeSync, type NodeSyncOptions } from './sync-client.js';
