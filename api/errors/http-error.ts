/**
 * An error only the HTTP edge raises: one whose status or headers no domain rule decides (koa's
 * own 4xx, `Content-Range` on a 416, `Connection: close` after an oversized body). Everything
 * below api/ throws the plain errors of domain/errors.ts instead.
 */
import { DomainError, type DomainErrorOptions, type ErrorKind } from '../../domain/errors';

export interface HttpErrorOptions extends DomainErrorOptions {
  /** The status when the code does not fix it (a bare koa error). */
  status?: number;
  headers?: Record<string, string>;
}

export class HttpError extends DomainError {
  readonly status?: number;
  readonly headers?: Record<string, string>;

  constructor(message: string, opts: HttpErrorOptions = {}, kind: ErrorKind = 'invalid_request') {
    const { status, headers, ...rest } = opts;
    super(kind, message, rest);
    this.status = status;
    this.headers = headers;
  }
}
