// Errors of the records area: ApiErrors whose codes (and so statuses) are the records' own entries of the registry.
import { ApiError } from '../../errors.js';

export type RecordErrorCode = 'CP_ERR_RECORD_INVALID' | 'CP_ERR_RECORD_CONFLICT' | 'CP_ERR_RECORD_DUPLICATE';

export class RecordError extends ApiError<RecordErrorCode> {}

export const invalid = (message: string): RecordError => new RecordError('CP_ERR_RECORD_INVALID', message);
