/**
 * Bodies come uncompressed. A body sent with `Content-Encoding: gzip` (or any coding but
 * `identity`) is refused with 415 before a byte is read: parsed as JSON it would fail as "not
 * UTF-8", and stored as an upload it would be kept compressed under the caller's file name.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { InvalidRequestError } from '../../domain/errors';

/** Throws 415 `unsupported_media_type` for a body whose Content-Encoding is not `identity`. */
export function assertIdentityEncoding(headers: IncomingHttpHeaders): void {
  const coding = headers['content-encoding']?.trim().toLowerCase();
  if (!coding || coding === 'identity') return;
  throw new InvalidRequestError(
    `Content-Encoding \`${coding.slice(0, 32)}\` is not supported: send the body uncompressed.`,
    { code: 'unsupported_media_type' },
  );
}
