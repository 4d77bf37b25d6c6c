// Import scan (id `import-scan:<domain>:<session>`): the domain's current nameservers are asked for a zone transfer;
// when none gives one, the common labels (scan-labels.ts) are asked through the public resolvers. Progress goes to
// the session after each step; a session discarded or superseded meanwhile stops the scan at its next report.
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { ScannedRecord, ScanNameserver, ScanProgress } from '../types.js';
import { SCAN_LABELS } from '../scan-labels.js';
import { interactive } from './proxies.js';

/** Each step retried a few times, then the scan fails with the reason (a scan the user waits for, not a watch). */
const scan = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 4 },
});

const LABELS_PER_STEP = 10;

export async function scanImportSession(input: { domain: string; sessionId: number }): Promise<string> {
  const { domain, sessionId } = input;
  const progress: ScanProgress = { phase: 'nameservers' };
  const report = async () => (await scan.reportImportProgress(sessionId, progress)) === 'scanning';
  try {
    if (!(await report())) return 'stopped';
    const observed = await scan.lookupNameservers(domain);
    const names = [...new Set(observed.flatMap((o) => o.values))].sort();
    const found = await scan.nameserverAddresses(names);
    const nameservers: ScanNameserver[] = found.flatMap((n) =>
      n.addresses.length
        ? n.addresses.map((address) => ({ name: n.name, address, result: 'waiting' }))
        : [{ name: n.name, result: 'no address' }],
    );
    progress.phase = 'axfr';
    progress.nameservers = nameservers;
    if (!(await report())) return 'stopped';
    const axfr = await scan.transferFromNameservers(domain, nameservers);
    progress.nameservers = axfr.nameservers;
    if (axfr.tooLarge) {
      await scan.reportImportFailed(sessionId, `the zone transfer was refused: ${axfr.tooLarge}`);
      return 'failed';
    }
    let records: ScannedRecord[];
    if (axfr.records) {
      progress.method = 'axfr';
      records = axfr.records;
    } else {
      progress.method = 'labels';
      progress.phase = 'labels';
      progress.labels_total = SCAN_LABELS.length;
      progress.labels_done = 0;
      records = [];
      for (let k = 0; k < SCAN_LABELS.length; k += LABELS_PER_STEP) {
        if (!(await report())) return 'stopped';
        const labels = SCAN_LABELS.slice(k, k + LABELS_PER_STEP);
        records.push(...(await scan.scanZone(domain, labels)));
        progress.labels_done += labels.length;
      }
    }
    progress.phase = 'planning';
    progress.found = records.length;
    return (await scan.reportImportScan(sessionId, { records, progress })) ?? 'gone';
  } catch (err) {
    const message = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    await scan.reportImportFailed(sessionId, `the scan failed: ${message}`);
    return 'failed';
  }
}

/** The proxied re-check of an external-DNS domain (id `recheck-proxied:<domain>`): what the resolvers answer. */
export async function lookupProxiedHostnames(input: {
  hostnames: string[];
}): Promise<{ hostname: string; addresses: string[]; error?: string }[]> {
  return interactive.lookupHostAddresses(input.hostnames);
}
