/**
 * HTTP `Range` requests (RFC 9110 §14) for file content, so browsers can seek in a video. Only a
 * single byte range is served as 206; several ranges, another unit or a malformed header are
 * ignored (the whole file, 200), as the RFC permits.
 */

export type RangeAnswer =
  | { kind: 'whole' }
  | { kind: 'partial'; start: number; end: number } // inclusive, as in Content-Range
  | { kind: 'unsatisfiable' };

/** Longer than any single range of a file we could hold (two 20-digit numbers and spaces). */
const MAX_RANGE_CHARS = 100;

/** Interprets a `Range` header value for a file of `size` bytes. */
export function parseRange(header: string | undefined, size: number): RangeAnswer {
  // A byte range is short: a long header is ignored before any pattern sees it (a pattern with
  // spaces on both sides of an empty number backtracks quadratically over thousands of them).
  if (!header || header.length > MAX_RANGE_CHARS) return { kind: 'whole' };
  const match = /^bytes=(\d*)-(\d*)$/i.exec(header.replace(/[ \t]+/g, ''));
  if (!match || (match[1] === '' && match[2] === '')) return { kind: 'whole' };
  if (match[1] === '') {
    const suffix = Number(match[2]); // the last N bytes
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? Infinity : Number(match[2]);
  if (end < start) return { kind: 'whole' }; // invalid: ignored
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end: Math.min(end, size - 1) };
}
