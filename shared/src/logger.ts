// pino with one child per component; hot paths log nothing per request.
import { pino, type Logger } from 'pino';

const root = pino({ level: process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'warn' : 'info') });

export function componentLogger(component: string): Logger {
  return root.child({ component });
}

export type { Logger };
