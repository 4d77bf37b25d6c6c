// The one error base every package extends: branch on `code`, never on instanceof (copies of a module break it).

export type ErrorKind = 'user' | 'system';

export class PlatformError<C extends string = string> extends Error {
  readonly code: C;
  readonly kind: ErrorKind;

  constructor(code: C, message: string, options: { kind?: ErrorKind; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'PlatformError';
    this.code = code;
    this.kind = options.kind ?? 'user';
  }
}

export function isPlatformError(err: unknown): err is PlatformError {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { code?: unknown }).code === 'string' &&
    (err as { name?: unknown }).name === 'PlatformError'
  );
}
