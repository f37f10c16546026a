/**
 * MIME type sniffing from a file's first bytes (D19: the type of an upload or a fetched file is
 * what its bytes say, never what a header claims). Only the formats AI workflows exchange are
 * recognised; anything else is `text/plain` when it reads as UTF-8 text, else
 * `application/octet-stream`.
 *
 * Hand-written on purpose; `file-type` (the maintained sniffer) was measured against this contract:
 * it names 3 of these formats differently (audio/x-m4a, image/heif, video/matroska), answers XML
 * as application/xml (XHTML in it runs scripts, and D19 files must never be served as a page), does
 * no text check, is ESM-only for Node >= 22 with types that TypeScript's `node10` resolution here
 * cannot see, and brings 9 packages. Wrapping it to this contract (a translation table, a type
 * allowlist, the text check, a type shim) would be as long as the checks below.
 */

/** How many leading bytes `sniffMime` wants; fewer are fine when the file is shorter. */
export const SNIFF_BYTES = 16 * 1024;

const ascii = (bytes: Uint8Array, at: number, text: string): boolean => {
  if (bytes.length < at + text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
};

const startsWith = (bytes: Uint8Array, signature: number[]): boolean =>
  bytes.length >= signature.length && signature.every((b, i) => bytes[i] === b);

/** Finds an ASCII string anywhere in the first `within` bytes (container doctypes and codec ids sit near the start). */
function contains(bytes: Uint8Array, text: string, within = 256): boolean {
  const end = Math.min(bytes.length, within) - text.length;
  for (let i = 0; i <= end; i++) if (ascii(bytes, i, text)) return true;
  return false;
}

/** ISO base media (MP4, MOV, M4A, HEIC, AVIF): `ftyp` box at offset 4, major brand after it. */
function isoMediaType(head: Uint8Array): string | undefined {
  if (!ascii(head, 4, 'ftyp') || head.length < 12) return undefined;
  const brand = String.fromCharCode(...head.subarray(8, 12));
  if (brand === 'qt  ') return 'video/quicktime';
  if (brand.startsWith('M4A') || brand.startsWith('M4B') || brand.startsWith('M4P'))
    return 'audio/mp4';
  if (brand === 'avif' || brand === 'avis') return 'image/avif';
  if (['heic', 'heix', 'mif1', 'msf1'].includes(brand)) return 'image/heic';
  return 'video/mp4';
}

/** An MPEG audio frame header (MP3 without an ID3 tag): sync bits, and no reserved version, layer, bitrate or rate. */
function isMpegAudioFrame(head: Uint8Array): boolean {
  if (head.length < 4 || head[0] !== 0xff || (head[1] & 0xe0) !== 0xe0) return false;
  const version = (head[1] >> 3) & 0b11;
  const layer = (head[1] >> 1) & 0b11;
  const bitrate = head[2] >> 4;
  const rate = (head[2] >> 2) & 0b11;
  return version !== 0b01 && layer !== 0b00 && bitrate !== 0b1111 && rate !== 0b11;
}

/**
 * WHATWG MIME Sniffing's "binary data bytes": control characters that never occur in text.
 * A NUL-laden blob is not text even though it is valid UTF-8.
 */
function hasBinaryControl(bytes: Uint8Array): boolean {
  for (const b of bytes) {
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f))
      return true;
  }
  return false;
}

/** True when the bytes are UTF-8; with `complete` false a sequence cut off at the end of `head` is allowed. */
function isUtf8(head: Uint8Array, complete: boolean): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: !complete });
    return true;
  } catch {
    return false;
  }
}

/**
 * The MIME type of a file from its first bytes. `complete` says whether `head` is the whole file
 * (then a truncated UTF-8 sequence at its end makes it binary).
 */
export function sniffMime(head: Uint8Array, complete: boolean): string {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (ascii(head, 0, 'GIF87a') || ascii(head, 0, 'GIF89a')) return 'image/gif';
  if (ascii(head, 0, 'RIFF') && ascii(head, 8, 'WEBP')) return 'image/webp';
  if (ascii(head, 0, 'RIFF') && ascii(head, 8, 'WAVE')) return 'audio/wav';
  const iso = isoMediaType(head);
  if (iso) return iso;
  if (startsWith(head, [0x1a, 0x45, 0xdf, 0xa3]))
    return contains(head, 'matroska', 64) ? 'video/x-matroska' : 'video/webm';
  if (ascii(head, 0, 'ID3') || isMpegAudioFrame(head)) return 'audio/mpeg';
  if (ascii(head, 0, 'OggS')) return contains(head, 'theora') ? 'video/ogg' : 'audio/ogg';
  if (ascii(head, 0, 'fLaC')) return 'audio/flac';
  if (ascii(head, 0, '%PDF-')) return 'application/pdf';
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04]) || startsWith(head, [0x50, 0x4b, 0x05, 0x06]))
    return 'application/zip';
  if (head.length > 0 && !hasBinaryControl(head) && isUtf8(head, complete)) return 'text/plain';
  return 'application/octet-stream';
}

/** The output part type for a MIME type (spec "Output part"): image, video, or file for everything else. */
export function partTypeOf(mime: string): 'image' | 'video' | 'file' {
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('video/')) return 'video';
  return 'file';
}

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/heic': 'heic',
  'audio/wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/webm': 'webm',
  'video/x-matroska': 'mkv',
  'video/ogg': 'ogv',
  'application/pdf': 'pdf',
  'application/zip': 'zip',
  'text/plain': 'txt',
};

/** The usual file extension of a MIME type (`bin` when unknown), for names of files that came without one. */
export function extensionOf(mime: string): string {
  return EXTENSIONS[mime] ?? 'bin';
}
