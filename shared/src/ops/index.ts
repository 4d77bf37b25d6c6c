// Health, readiness and Prometheus metrics of every process (the /healthz, /readyz and /metrics endpoints).
export * from './readiness.js';
export * from './ops-server.js';
export * from './metrics.js';
export * from './node-sync.js';
