// Errors of the records area: each carries the HTTP status the API answers with; routes turn them into ApiError.
import { PlatformError } from '@platform/shared';

export type RecordErrorCode =
  | 'CP_ERR_RECORD_INVALID' // 400: a field breaks a rule of the record table
  | 'CP_ERR_RECORD_CONFLICT' // 400: CNAME exclusivity or another zone rule
  | 'CP_ERR_RECORD_DUPLICATE' // 409: an identical record already exists
  | 'CP_ERR_RECORD_NOT_FOUND' // 404: no such record on this domain
  | 'CP_ERR_RECORD_LIMIT' // 403: the plan's max_records would be exceeded
  | 'CP_ERR_DOMAIN_NOT_WRITABLE'; // 409: the domain is disabled or banned

const STATUS: Record<RecordErrorCode, number> = {
  CP_ERR_RECORD_INVALID: 400,
  CP_ERR_RECORD_CONFLICT: 400,
  CP_ERR_RECORD_DUPLICATE: 409,
  CP_ERR_RECORD_NOT_FOUND: 404,
  CP_ERR_RECORD_LIMIT: 403,
  CP_ERR_DOMAIN_NOT_WRITABLE: 409,
};

export class RecordError extends PlatformError<RecordErrorCode> {
  readonly statusCode: number;
  constructor(code: RecordErrorCode, message: string) {
    super(code, message, { kind: 'user' });
    this.statusCode = STATUS[code];
  }
}

export const invalid = (message: string): RecordError => new RecordError('CP_ERR_RECORD_INVALID', message);
