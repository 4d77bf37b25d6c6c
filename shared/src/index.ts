// Light public entry of @platform/shared: errors, env reading, the logger and shared types. Heavier parts have their own
// entries so that a process loads only what it uses: `@platform/shared/config` (protobuf codec), `/node-store` (LMDB
// store and sync client), `/match` (rule matchers), `/node-process` (node entry-point plumbing), `/node-token`.
export * from './errors.js';
export * from './env.js';
export * from './logger.js';
export * from './typed-arrays.js';
export type * from './types/index.js';
