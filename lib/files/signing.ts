/**
 * Signed links: file links (D19) `{base}/files/{fileId}/content?expires=<unix s>&sig=<HMAC>` work
 * without an Authorization header, so `<img src>` and `<video src>` work in a browser; stream links
 * (D34) `{base}/streams/{runId}?expires=&sig=` do the same for a browser's EventSource. The
 * signature is HMAC-SHA256 over the link's subject and the expiry with a server secret, so neither
 * can be changed without the secret; the expiry bounds how long a leaked link works. A link made
 * for a caller's key also names that key (`kid=`, covered by the signature), so the server can
 * refuse it once the key is revoked (D6).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The path a file's content is served at (api/routes/files.ts mounts the same). */
export function contentPath(fileId: string): string {
  return `/files/${encodeURIComponent(fileId)}/content`;
}

/** The path a stream link opens (api/routes/stream-links.ts mounts the same). */
export function streamPath(runId: string): string {
  return `/streams/${encodeURIComponent(runId)}`;
}

/**
 * What a stream link's signature covers besides the expiry. The prefix keeps the two kinds of link
 * apart: a file id never contains `:`, so no file link's signature opens a stream, nor the reverse.
 */
export const streamSubject = (runId: string): string => `stream:${runId}`;

/** A key id as a link may name it (`key_...`): never a `.`, so the signed text stays unambiguous. */
const KEY_ID = /^key_[A-Za-z0-9_-]{1,64}$/;

function signature(secret: string, subject: string, expires: number, keyId?: string): string {
  // The separator keeps (subject, expiry, key) unambiguous; subjects and key ids never contain `.`.
  const text = keyId === undefined ? `${subject}.${expires}` : `${subject}.${expires}.${keyId}`;
  return createHmac('sha256', secret).update(text).digest('base64url');
}

/**
 * `?expires=&sig=` for a subject (a file id, or streamSubject(runId)) valid until `expires` (Unix
 * seconds); with `keyId`, `?expires=&kid=&sig=`: the link of that key only.
 */
export function signedQuery(
  secret: string,
  subject: string,
  expires: number,
  keyId?: string,
): string {
  if (keyId !== undefined && !KEY_ID.test(keyId)) throw new Error(`not a key id: ${keyId}`);
  const kid = keyId === undefined ? '' : `&kid=${keyId}`;
  return `expires=${expires}${kid}&sig=${signature(secret, subject, expires, keyId)}`;
}

/** A signed link to a file, valid until `nowMs + ttlSeconds`. */
export function signFileUrl(opts: {
  baseUrl: string;
  secret: string;
  fileId: string;
  ttlSeconds: number;
  nowMs?: number;
  /** The caller's key the link is made for (D6: it stops working once that key is revoked). */
  keyId?: string;
}): string {
  const expires = Math.floor((opts.nowMs ?? Date.now()) / 1000) + opts.ttlSeconds;
  return signedUrlAt(opts.baseUrl, opts.secret, opts.fileId, expires, opts.keyId);
}

/** A link with an explicit expiry (Unix seconds); tests use it to craft an expired one. */
export function signedUrlAt(
  baseUrl: string,
  secret: string,
  fileId: string,
  expires: number,
  keyId?: string,
): string {
  const base = baseUrl.replace(/\/+$/, '');
  return `${base}${contentPath(fileId)}?${signedQuery(secret, fileId, expires, keyId)}`;
}

export type LinkCheck = 'ok' | 'invalid_signature' | 'url_expired';

/**
 * Checks a link's query values for its subject (a file id, or streamSubject(runId)): the signature first (a forged link is `invalid_signature`
 * whatever its expiry says), then the expiry, which the signature covers. `kid` is the link's key id
 * query value (undefined when it names none); whether that key is still live is the caller's check.
 */
export function checkFileSignature(
  secret: string,
  subject: string,
  expires: unknown,
  sig: unknown,
  nowMs = Date.now(),
  kid?: unknown,
): LinkCheck {
  if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires) || typeof sig !== 'string')
    return 'invalid_signature';
  if (kid !== undefined && (typeof kid !== 'string' || !KEY_ID.test(kid)))
    return 'invalid_signature';
  const expected = Buffer.from(signature(secret, subject, Number(expires), kid));
  const given = Buffer.from(sig);
  // Constant-time comparison, so response timing reveals nothing about the right signature.
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return 'invalid_signature';
  return Number(expires) * 1000 < nowMs ? 'url_expired' : 'ok';
}
