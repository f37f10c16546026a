/**
 * The per-key cap on results-file downloads (D35's JSON Lines and CSV exports, docs/api.md
 * "Connections"): a key holds at most `DOWNLOAD_MAX_PER_KEY` of them at once in one API process
 * (api/limits/key-cap.ts); one more is a 429 `too_many_downloads` with `Retry-After`, before any
 * item is read. A download of 100,000 items of 2 KB is 3.5 s of the process's one thread (bench
 * P4b; a million, ten times that), in slices between other answers: without the cap one key's
 * dozens of downloads at once, all within its request rate, would slow every other account's
 * answers on that process by as many times. A finished big run read whole (GET, or the answer to
 * a cancel or a waited start, D31) is as much work and counts too. The pages of `/outputs` are
 * not downloads.
 */
import { RateLimitError } from '../../domain/errors';
import { KeyCap } from '../limits/key-cap';

/** Seconds a refused client waits before it tries again: a download takes seconds to a minute. */
export const DOWNLOAD_RETRY_AFTER_SECONDS = 5;

/** 429 `too_many_downloads`. */
export class TooManyDownloadsError extends RateLimitError {
  constructor(max: number) {
    super(
      `This API key already has ${max} downloads in progress (results files, finished big runs read whole, files over 8 MiB through its links), the most it may hold: let one finish, or read a run's items as pages (GET /api/v1/runs/{runId}/outputs/{key} as JSON).`,
      DOWNLOAD_RETRY_AFTER_SECONDS,
      'too_many_downloads',
    );
  }
}

/** Results-file downloads per key in this process. */
export function downloadCap(maxPerKey: number): KeyCap {
  return new KeyCap(maxPerKey, (max) => new TooManyDownloadsError(max));
}
