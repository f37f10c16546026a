/**
 * The per-key cap on open streams (docs/api.md "Connections"): a key holds at most
 * `STREAM_MAX_PER_KEY` open SSE streams in one API process (api/limits/key-cap.ts); one more is a
 * 429 `too_many_streams` with `Retry-After`, answered before anything starts (a streaming start
 * is refused before its run is created, so nothing is billed).
 */
import { RateLimitError } from '../../domain/errors';
import { KeyCap } from '../limits/key-cap';

/** Seconds a refused client waits before it tries again: streams end when their runs do. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/** 429 `too_many_streams`. */
export class TooManyStreamsError extends RateLimitError {
  constructor(max: number) {
    super(
      `This API key already has ${max} open streams, the most it may hold: close one, or poll GET /api/v1/runs/{runId} instead.`,
      STREAM_RETRY_AFTER_SECONDS,
      'too_many_streams',
    );
  }
}

/** Open streams per key in this process. */
export function streamCap(maxPerKey: number): KeyCap {
  return new KeyCap(maxPerKey, (max) => new TooManyStreamsError(max));
}
