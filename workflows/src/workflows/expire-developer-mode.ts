// Developer-mode expiry (id `developer-mode:<domain>`): a timer that switches developer mode off when it expires.
// POST developer-mode re-arms it (signal `extendDeveloperMode`); DELETE stops it (signal `stopDeveloperMode`).
import { condition, defineSignal, log, setHandler } from '@temporalio/workflow';
import { background } from './proxies.js';

export const extendDeveloperModeSignal = defineSignal<[number]>('extendDeveloperMode');
export const stopDeveloperModeSignal = defineSignal('stopDeveloperMode');

export async function expireDeveloperMode(input: { domain: string; expiresAtMs: number }): Promise<string> {
  let until = input.expiresAtMs;
  let stopped = false;
  setHandler(extendDeveloperModeSignal, (ms: number) => {
    until = ms;
  });
  setHandler(stopDeveloperModeSignal, () => {
    stopped = true;
  });
  for (;;) {
    const armed = until;
    const remaining = armed - Date.now();
    if (remaining > 0) {
      await condition(() => stopped || until !== armed, remaining);
      if (stopped) return 'stopped';
      if (until !== armed) continue;
    }
    const reply = await background.endDeveloperMode(input.domain, armed);
    log.info('developer mode expired', { domain: input.domain, enabled: reply?.enabled });
    return reply ? (reply.enabled ? 'still-on' : 'off') : 'deleted';
  }
}
