/**
 * The one error hierarchy of the API. Every error carries the HTTP status and the envelope's
 * `type` and `code` (docs/api.md "Errors", the status table of docs/decisions.md); the error middleware turns
 * any of them into `{"error": {...}}`.
 */
export interface ProblemDetail {
  field: string;
  problem: string;
}

export interface ApiErrorOptions {
  code?: string;
  param?: string;
  details?: ProblemDetail[];
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly code?: string;
  readonly param?: string;
  readonly details?: ProblemDetail[];
  readonly headers?: Record<string, string>;

  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    opts: ApiErrorOptions = {},
  ) {
    super(message);
    this.name = new.target.name;
    this.code = opts.code;
    this.param = opts.param;
    this.details = opts.details;
    this.headers = opts.headers;
  }

  /** 4xx messages are written for the caller; 5xx messages may hold internals and are replaced. */
  get expose(): boolean {
    return this.status < 500;
  }
}

/** 400 (or 409, 413, 415, 422 with a code) `invalid_request_error`. */
export class InvalidRequestError extends ApiError {
  constructor(message: string, opts: ApiErrorOptions & { status?: number } = {}) {
    super(opts.status ?? 400, 'invalid_request_error', message, opts);
  }
}

/** D4: one message naming every bad field, `param` the first, `details` one entry per field. */
export class InvalidInputsError extends InvalidRequestError {
  constructor(message: string, details: ProblemDetail[]) {
    super(message, { code: 'invalid_input_fields', param: details[0]?.field, details });
  }
}

export class AuthenticationError extends ApiError {
  constructor(
    message = 'Missing or invalid API key. Send it as `Authorization: Bearer <API_KEY>`.',
  ) {
    super(401, 'authentication_error', message, {
      code: 'invalid_api_key',
      headers: { 'WWW-Authenticate': 'Bearer' },
    });
  }
}

export class InsufficientCreditsError extends ApiError {
  constructor(message = 'This account has no credit left. Add credits to start runs.') {
    super(402, 'insufficient_credits', message, { code: 'insufficient_credits' });
  }
}

export class NotFoundError extends ApiError {
  constructor(message: string, code = 'not_found') {
    super(404, 'not_found_error', message, { code });
  }
}

export class RateLimitError extends ApiError {
  constructor(message: string, headers: Record<string, string>) {
    super(429, 'rate_limit_error', message, { code: 'rate_limit_exceeded', headers });
  }
}

/** Temporal or MongoDB cannot be reached right now: retry later (issue 8: never a hang). */
export class ServiceUnavailableError extends ApiError {
  constructor(message = 'The service is temporarily unavailable. Retry shortly.') {
    super(503, 'server_error', message, {
      code: 'service_unavailable',
      headers: { 'Retry-After': '2' },
    });
  }

  override get expose(): boolean {
    return true; // the message is ours and says nothing about internals
  }
}
