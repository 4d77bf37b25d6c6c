// Public entry of @platform/shared: code used by several processes.
export * from './errors.js';
export * from './env.js';
export * from './logger.js';
export * from './config/index.js';
export * from './node-store/index.js';
export * from './node-process.js';
