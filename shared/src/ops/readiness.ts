// Readiness of a process, as /readyz reports it: named checks, each ready or not with a reason a person can act on.

export interface CheckResult {
  ready: boolean;
  /** What the check saw: the reason when not ready ("cannot reach ws://…: connect ECONNREFUSED …"), else a status. */
  detail: string;
}

/** A named check; may be async (a database round trip), and is bounded by the caller's timeout. */
export type ReadinessCheck = () => CheckResult | Promise<CheckResult>;

export interface ReadinessReport {
  status: 'ready' | 'not ready';
  /** Names of the checks that are not ready (empty when ready). */
  failing: string[];
  checks: Record<string, CheckResult>;
}

const CHECK_TIMEOUT_MS = 2000;

/** Runs every check at once, each bounded by CHECK_TIMEOUT_MS (a check that hangs is not ready, with that reason). */
export async function checkReadiness(checks: Record<string, ReadinessCheck>): Promise<ReadinessReport> {
  const names = Object.keys(checks);
  const results = await Promise.all(
    names.map(async (name): Promise<CheckResult> => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<CheckResult>((resolve) => {
        timer = setTimeout(
          () => resolve({ ready: false, detail: `no answer within ${CHECK_TIMEOUT_MS} ms` }),
          CHECK_TIMEOUT_MS,
        );
      });
      try {
        return await Promise.race([Promise.resolve().then(checks[name]!), timeout]);
      } catch (err) {
        return { ready: false, detail: err instanceof Error ? err.message : String(err) };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const report: ReadinessReport = { status: 'ready', failing: [], checks: {} };
  names.forEach((name, i) => {
    report.checks[name] = results[i]!;
    if (!results[i]!.ready) report.failing.push(name);
  });
  if (report.failing.length > 0) report.status = 'not ready';
  return report;
}
