// Errors of the records area: each carries the HTTP status the API answers with; routes turn them into ApiError.
import { PlatformError } from '@platform/shared';

export type RecordErrorCode =
  | 'CP_ERR_RECORD_INVALID' // 400: a field breaks a rule of the record table
  | 'CP_ERR_RECORD_CONFLICT' // 400: CNAME exclusivity or another zone rule
  | 'CP_ERR_RECORD_DUPLICATE'; // 409: an identical record already exists

const STATUS: Record<RecordErrorCode, number> = {
  CP_ERR_RECORD_INVALID: 400,
  CP_ERR_RECORD_CONFLICT: 400,
  CP_ERR_RECORD_DUPLICATE: 409,
};

export class RecordError extends PlatformError<RecordErrorCode> {
  readonly statusCode: number;
  constructor(code: RecordErrorCode, message: string) {
    super(code, message, { kind: 'user' });
    this.statusCode = STATUS[code];
  }
}

export const invalid = (message: string): RecordError => new RecordError('CP_ERR_RECORD_INVALID', message);
