/**
 * Bodies come uncompressed. A body sent with `Content-Encoding: gzip` (or any coding but
 * `identity`) is refused with 415 before a byte is read: parsed as JSON it would fail as "not
 * UTF-8", and stored as an upload it would be kept compressed under the caller's file name. The
 * same holds for a transfer coding other than `chunked` (`Transfer-Encoding: gzip, chunked`):
 * Node's parser undoes the chunking only and hands the compressed bytes on.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { InvalidRequestError } from '../../domain/errors';

/** Throws 415 `unsupported_media_type` for a body with a content coding, or a transfer coding but `chunked`. */
export function assertIdentityEncoding(headers: IncomingHttpHeaders): void {
  const coding = headers['content-encoding']?.trim().toLowerCase();
  if (coding && coding !== 'identity') throw unsupported('Content-Encoding', coding);
  const transfer = headers['transfer-encoding']
    ?.toLowerCase()
    .split(',')
    .map((c) => c.trim())
    .find((c) => c !== 'chunked');
  if (transfer !== undefined) throw unsupported('Transfer-Encoding', transfer);
}

function unsupported(header: string, coding: string): InvalidRequestError {
  return new InvalidRequestError(
    `${header} \`${coding.slice(0, 32)}\` is not supported: send the body uncompressed.`,
    { code: 'unsupported_media_type' },
  );
}
