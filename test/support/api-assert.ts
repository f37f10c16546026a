/** Assertions shared by the API-surface tests: the error envelope (spec "Errors", D22) and D4/D26 details. */
import assert from 'node:assert/strict';
import type { ApiResponse } from './http';

export interface ExpectedError {
  status: number;
  type: string;
  code?: string;
  /** Substrings the message must contain (case-sensitive). */
  message?: Array<string | RegExp>;
  param?: string;
}

// Fragments that only a leaked stack trace or internal path would put in a body.
const STACK_MARKERS = [
  /\n\s+at /,
  /\bat [\w.<>]+ \(/,
  /\.ts:\d+/,
  /\.js:\d+/,
  /node_modules/,
  /"stack"/,
];

/** Asserts that a body carries no stack trace or source location. */
export function assertNoStack(res: ApiResponse): void {
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  for (const marker of STACK_MARKERS)
    assert.doesNotMatch(text, marker, `body leaks internals: ${text.slice(0, 500)}`);
}

/** Asserts the D22 allow-origin header. */
export function assertCors(res: ApiResponse): void {
  assert.equal(
    res.headers.get('access-control-allow-origin'),
    '*',
    `no CORS allow-origin on a ${res.status}`,
  );
}

/** Asserts status, envelope shape, type, code, message content, CORS and no stack trace; returns `body.error`. */
export function expectError(res: ApiResponse, expected: ExpectedError): any {
  const dump = JSON.stringify(res.body)?.slice(0, 2000);
  assert.equal(res.status, expected.status, `status: ${dump}`);
  assert.equal(typeof res.body, 'object', `not a JSON body: ${dump}`);
  assert.ok(res.body !== null && typeof res.body.error === 'object', `no error envelope: ${dump}`);
  assert.deepEqual(Object.keys(res.body), ['error'], `envelope has extra top-level keys: ${dump}`);
  const { error } = res.body;
  assert.equal(typeof error.message, 'string', `message: ${dump}`);
  assert.ok(error.message.length > 0, `empty message: ${dump}`);
  assert.equal(error.type, expected.type, `type: ${dump}`);
  if (expected.code !== undefined) assert.equal(error.code, expected.code, `code: ${dump}`);
  for (const part of expected.message ?? []) {
    if (typeof part === 'string')
      assert.ok(
        error.message.includes(part),
        `message lacks ${JSON.stringify(part)}: ${error.message}`,
      );
    else assert.match(error.message, part);
  }
  if (expected.param !== undefined) assert.equal(error.param, expected.param, `param: ${dump}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, 'error content-type');
  assertCors(res);
  assertNoStack(res);
  return error;
}

/** The `problem` of the one `details` entry for `field` (fails when there is none or several). */
export function detailFor(
  error: { details?: Array<{ field: string; problem: string }> },
  field: string,
): string {
  assert.ok(Array.isArray(error.details), `no details: ${JSON.stringify(error)}`);
  const hits = error.details.filter((d) => d.field === field);
  assert.equal(
    hits.length,
    1,
    `expected one details entry for ${field}: ${JSON.stringify(error.details)}`,
  );
  return hits[0].problem;
}

/** ISO 8601 with date and time (and a zone), as the spec's `created_at` requires. */
export const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * D6: after a key's revocation at `revokedAt`, polls `send` (one request with the key, its
 * status) until it is refused, and asserts that every request still accepted was sent within
 * 2 s of the revocation (an API process may remember a key that long, no longer).
 */
export async function expectRefusedWithin2s(
  send: () => Promise<number>,
  revokedAt: number,
): Promise<void> {
  let lastAcceptedMs = 0;
  for (;;) {
    const sentAfter = Date.now() - revokedAt;
    const status = await send();
    if (status === 401) break;
    lastAcceptedMs = sentAfter;
    assert.ok(
      sentAfter <= 2_000,
      `accepted a request sent ${sentAfter} ms after the revocation (status ${status})`,
    );
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(lastAcceptedMs <= 2_000);
}
