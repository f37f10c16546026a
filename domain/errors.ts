/**
 * The errors every layer throws, in the model's words: what went wrong (`kind`), which documented
 * `code` says so, and which field (`param`, `details`). No HTTP here: api/errors/ is the one place
 * that turns a kind and a code into a status, an envelope `type` and headers (docs/api.md "Errors").
 */
import { boundedProblems } from './problems';

export interface ProblemDetail {
  field: string;
  problem: string;
}

/** What went wrong, as the caller sees it; the code (when there is one) says it precisely. */
export type ErrorKind =
  | 'invalid_request'
  | 'authentication'
  | 'insufficient_credits'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

export interface DomainErrorOptions {
  code?: string;
  param?: string;
  details?: ProblemDetail[];
  /** How long the caller should wait before it tries again (rate limits, an unavailable dependency). */
  retryAfterSeconds?: number;
}

export class DomainError extends Error {
  readonly code?: string;
  readonly param?: string;
  readonly details?: ProblemDetail[];
  readonly retryAfterSeconds?: number;

  constructor(
    readonly kind: ErrorKind,
    message: string,
    opts: DomainErrorOptions = {},
  ) {
    super(message);
    this.name = new.target.name;
    this.code = opts.code;
    this.param = opts.param;
    this.details = opts.details && boundedProblems(opts.details); // an answer's size stays bounded
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

/** The request cannot be served as sent: a bad field, a conflict or a refusal its `code` names. */
export class InvalidRequestError extends DomainError {
  constructor(message: string, opts: DomainErrorOptions = {}) {
    super('invalid_request', message, opts);
  }
}

/** D4: one message naming every bad field, `param` the first, `details` one entry per field. */
export class InvalidInputsError extends InvalidRequestError {
  constructor(message: string, details: ProblemDetail[]) {
    super(message, { code: 'invalid_input_fields', param: details[0]?.field, details });
  }
}

/** The caller did not prove who it is (a missing, unknown or revoked API key). */
export class AuthenticationError extends DomainError {
  constructor(
    message = 'Missing or invalid API key. Send it as `Authorization: Bearer <API_KEY>`.',
    code = 'invalid_api_key',
  ) {
    super('authentication', message, { code });
  }
}

/** D17: the account has no credit available for a new run. */
export class InsufficientCreditsError extends DomainError {
  constructor(message = 'This account has no credit left. Add credits to start runs.') {
    super('insufficient_credits', message, { code: 'insufficient_credits' });
  }
}

/** No such thing for this caller (never telling "exists but not yours" apart, D6). */
export class NotFoundError extends DomainError {
  constructor(message: string, code = 'not_found') {
    super('not_found', message, { code });
  }
}

/** Over a limit that frees itself in `retryAfterSeconds` (D16 rate limits, D40 stream cap). */
export class RateLimitError extends DomainError {
  constructor(message: string, retryAfterSeconds: number, code = 'rate_limit_exceeded') {
    super('rate_limited', message, { code, retryAfterSeconds });
  }
}

/** Temporal or MongoDB cannot be reached right now: retry later, never a hang. */
export class ServiceUnavailableError extends DomainError {
  constructor(message = 'The service is temporarily unavailable. Retry shortly.') {
    super('unavailable', message, { code: 'service_unavailable', retryAfterSeconds: 2 });
  }
}
