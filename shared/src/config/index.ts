// Compiled config: the protobuf messages streamed from the control plane to nodes, and their codec.
export * from './types.js';
export * from './codec.js';
export * from './frames.js';
export * from './parts.js';
export * from './snapshot-writer.js';
export * from './delta.js';
export * from './cert-seal.js';
export * from './acme-http.js';
export * from './custom-pages.js';
export * from './dnssec.js';
