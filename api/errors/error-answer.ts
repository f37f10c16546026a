/**
 * The one place an error becomes an HTTP answer: any thrown value (a domain error, a driver or
 * Temporal error, a koa error) maps to a status, headers and the `{"error": {...}}` envelope.
 * Statuses and types come from the code list (codes.ts); no stack trace or internal message of
 * a server fault ever leaves.
 */
import { MongoServerError } from 'mongodb';
import { isStoreUnreachable } from '../../store/db';
import { DomainError, ServiceUnavailableError, type ProblemDetail } from '../../domain/errors';
import { isTemporalUnavailable } from '../temporal/grpc-errors';
import { ERROR_CODES, KIND_ANSWERS, isErrorCode, type ErrorType } from './codes';
import { HttpError } from './http-error';

export interface ErrorEnvelope {
  message: string;
  type: ErrorType;
  code?: string;
  param?: string;
  details?: ProblemDetail[];
}

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  error: ErrorEnvelope;
}

export const SERVER_FAULT_MESSAGE = 'The server had an error while processing your request.';

/** Maps any thrown value to the answer the caller gets. */
export function errorAnswer(err: unknown): ErrorAnswer {
  const known = asDomainError(err);
  if (!known) {
    return {
      status: 500,
      headers: {},
      error: { message: SERVER_FAULT_MESSAGE, type: 'server_error' },
    };
  }
  const byCode = known.code && isErrorCode(known.code) ? ERROR_CODES[known.code] : undefined;
  const answer = byCode ?? KIND_ANSWERS[known.kind];
  const status = (known instanceof HttpError && known.status) || answer.status;
  const headers: Record<string, string> = {};
  if (known.kind === 'authentication') headers['WWW-Authenticate'] = 'Bearer';
  if (known.retryAfterSeconds !== undefined)
    headers['Retry-After'] = String(known.retryAfterSeconds);
  if (known instanceof HttpError) Object.assign(headers, known.headers);
  // 4xx messages are written for the caller; of the 5xx only "unavailable" is ours to show.
  const expose = status < 500 || known.kind === 'unavailable';
  return {
    status,
    headers,
    error: {
      message: expose ? known.message : SERVER_FAULT_MESSAGE,
      type: answer.type,
      ...(known.code ? { code: known.code } : {}),
      ...(known.param ? { param: known.param } : {}),
      ...(known.details ? { details: known.details } : {}),
    },
  };
}

/** A domain error as thrown, or what an unreachable dependency or a koa error means; else undefined. */
function asDomainError(err: unknown): DomainError | undefined {
  if (err instanceof DomainError) return err;
  if (isStoreUnreachable(err) || isDatabaseBusy(err) || isTemporalUnavailable(err)) {
    return new ServiceUnavailableError();
  }
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // koa / @koa/router HttpErrors (405 from allowedMethods, 501, 415 ...)
    if (status === 404) return new HttpError('Not found.', { code: 'not_found' }, 'not_found');
    if (status === 405)
      return new HttpError('Method not allowed on this route.', { code: 'method_not_allowed' });
    return new HttpError((err as Error).message || 'Bad request.', { status });
  }
  return undefined;
}

/**
 * A write the database refused for now, with nothing written: MongoDB's transient lock and
 * conflict errors, and FerretDB's SQLite writer lock held past its busy timeout (17 of 1,000
 * starts under load once answered 500 with it). The caller may retry: 503 with Retry-After.
 */
export function isDatabaseBusy(err: unknown): boolean {
  if (!(err instanceof MongoServerError)) return false;
  const TRANSIENT_CODES = [
    24 /* LockTimeout */, 50 /* MaxTimeMSExpired */, 112 /* WriteConflict */,
  ];
  return (
    err.hasErrorLabel('TransientTransactionError') ||
    TRANSIENT_CODES.includes(Number(err.code)) ||
    /SQLITE_BUSY|database is locked/.test(err.message)
  );
}
