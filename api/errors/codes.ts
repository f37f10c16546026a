/**
 * Every error `code` the API answers with, and the status and envelope `type` it is sent with:
 * the one list of them (docs/api.md "Errors" documents the same set; a unit test,
 * test/api/errors/codes.unit.test.ts, holds the two together). A code thrown anywhere that is
 * not here fails that test; an error with no code answers by its kind (KIND_ANSWERS).
 */
import type { ErrorKind } from '../../domain/errors';

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'insufficient_credits'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error';

export interface ErrorAnswer {
  status: number;
  type: ErrorType;
}

const invalid = (status: number): ErrorAnswer => ({ status, type: 'invalid_request_error' });

export const ERROR_CODES = {
  // 400: the request as sent cannot be served
  invalid_json: invalid(400),
  invalid_input_fields: invalid(400),
  invalid_workflow: invalid(400),
  invalid_webhook: invalid(400),
  invalid_metadata: invalid(400),
  invalid_idempotency_key: invalid(400),
  empty_file: invalid(400),
  invalid_multipart: invalid(400),
  upload_interrupted: invalid(400),
  request_interrupted: invalid(400), // a JSON body its client cut off (errors/client-gone.ts)
  malformed_request: invalid(400),
  cursor_out_of_range: invalid(400),
  run_too_large: invalid(400),
  model_not_offered: invalid(400), // D17: UNPRICED_MODELS=refuse
  nothing_to_rerun: invalid(400), // D38
  invalid_payloads: invalid(400),
  undecodable_payload: invalid(400),
  // 401, 402, 403: who the caller is and what it may do
  invalid_api_key: { status: 401, type: 'authentication_error' },
  invalid_codec_token: { status: 401, type: 'authentication_error' },
  insufficient_credits: { status: 402, type: 'insufficient_credits' },
  invalid_signature: invalid(403),
  url_expired: invalid(403),
  key_revoked: invalid(403),
  // 404
  not_found: { status: 404, type: 'not_found_error' },
  published_workflow_not_found: { status: 404, type: 'not_found_error' },
  published_workflow_version_not_found: { status: 404, type: 'not_found_error' },
  asset_not_found: { status: 404, type: 'not_found_error' },
  // 405 to 431: HTTP-level refusals and conflicts
  method_not_allowed: invalid(405),
  request_timeout: invalid(408),
  idempotency_key_reused: invalid(409),
  run_not_cancellable: invalid(409),
  run_not_finished: invalid(409), // D38
  run_inputs_erased: invalid(409), // D38: a re-run whose inputs went with a deleted ancestor (D39)
  file_of_run: invalid(409), // D19: a run's own file goes with the run
  request_too_large: invalid(413), // 431 when the request line and headers are too large (api/server.ts)
  storage_quota_exceeded: invalid(413), // D19, D26: the account's files, or its published workflows, hold what they may
  unsupported_media_type: invalid(415),
  range_not_satisfiable: invalid(416),
  expectation_failed: invalid(417), // an `Expect` but 100-continue (api/server.ts)
  workflow_graph_corrupt: invalid(422),
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  too_many_streams: { status: 429, type: 'rate_limit_error' },
  too_many_downloads: { status: 429, type: 'rate_limit_error' },
  too_many_publishes: { status: 429, type: 'rate_limit_error' },
  // 503: retry later
  service_unavailable: { status: 503, type: 'server_error' },
} as const satisfies Record<string, ErrorAnswer>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** How an error without a (known) code answers: by what went wrong. */
export const KIND_ANSWERS: Record<ErrorKind, ErrorAnswer> = {
  invalid_request: invalid(400),
  authentication: { status: 401, type: 'authentication_error' },
  insufficient_credits: { status: 402, type: 'insufficient_credits' },
  forbidden: invalid(403),
  not_found: { status: 404, type: 'not_found_error' },
  conflict: invalid(409),
  rate_limited: { status: 429, type: 'rate_limit_error' },
  unavailable: { status: 503, type: 'server_error' },
  internal: { status: 500, type: 'server_error' },
};

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}
