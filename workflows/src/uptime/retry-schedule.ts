// The uptime webhook's retry schedule, shared by the delivery workflow and the worker's configuration (no imports:
// the workflow bundle takes it as it is).

/** Spec Events, delivery rules 1–2: anything but a 2xx within 5 s is retried twice, after 5 s and after 30 s. */
export const WEBHOOK_RETRY_DELAYS_MS: readonly [number, number] = [5_000, 30_000];
