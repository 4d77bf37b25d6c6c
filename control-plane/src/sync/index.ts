// Sync hub: streams the config log to edge and DNS nodes.
export { startSyncHub, type SyncHub, type SyncHubOptions } from './hub.js';
