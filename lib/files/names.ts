/** File names as callers and remote servers give them, made safe to store and to put in a header. */
import { extensionOf } from './sniff';

const MAX_NAME = 255;

/**
 * What a file name may not hold: control characters (C0, DEL, C1), format characters (bidi
 * overrides and isolates such as U+202E, which make `exe.pdf` read as `fdp.exe`, zero-width
 * characters, soft hyphen), line and paragraph separators, unpaired surrogates and `"`.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}"]/gu;

/**
 * Drops directories, unsafe characters (UNSAFE) and surrounding blanks, NFC-normalized (one
 * spelling per name); undefined when nothing usable is left.
 */
export function cleanFileName(raw: string | undefined | null): string | undefined {
  if (!raw) return undefined;
  const base = raw.split(/[\\/]/).pop() ?? '';

  // Cut by code points, so the cut never leaves half a surrogate pair.
  const clean = [...base.normalize('NFC').replace(UNSAFE, '').trim()].slice(0, MAX_NAME).join('');
  return clean === '' || clean === '.' || clean === '..' ? undefined : clean;
}

/** The file name a remote answer suggests: Content-Disposition's, else the URL's last path segment. */
export function remoteFileName(
  url: URL | undefined,
  contentDisposition: string | undefined | null,
): string | undefined {
  const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(contentDisposition ?? '');
  if (star) {
    try {
      const name = cleanFileName(decodeURIComponent(star[1].trim()));
      if (name) return name;
    } catch {
      // malformed percent-encoding: try the plain parameter
    }
  }
  const plain = /filename\s*=\s*"?([^";]+)"?/.exec(contentDisposition ?? '');
  if (plain) {
    const name = cleanFileName(plain[1]);
    if (name) return name;
  }
  if (!url || url.protocol === 'data:') return undefined;
  const segment = url.pathname.split('/').filter(Boolean).pop();
  if (!segment) return undefined;
  try {
    return cleanFileName(decodeURIComponent(segment));
  } catch {
    return cleanFileName(segment);
  }
}

/** A name for a file that came without one, from its type: `image-1.png`, `output.mp4`. */
export function fallbackName(stem: string, mime: string): string {
  return `${stem}.${extensionOf(mime)}`;
}

/** `name` as given, or with the type's extension when it has none (`clip` → `clip.mp4`), so downloads open right. */
export function withExtension(name: string, mime: string): string {
  return /\.[A-Za-z0-9]{1,8}$/.test(name) ? name : fallbackName(name, mime);
}

/** Extensions a browser or desktop opens as a page or a script, whatever the bytes are. */
const ACTIVE_EXTENSION = /\.(?:html?|xht(?:ml?)?|shtml?|svgz?|xml|xslt?|js|mjs|hta|mht(?:ml)?)$/i;

/**
 * The name a file is served under: as stored (cleaned again, as for the header), unless its
 * extension would have a saved copy opened as a page or a script (`x.html` holding a PDF/HTML
 * polyglot, opened from disk outside our sandbox): then the sniffed type's extension is added
 * (`x.html.pdf`, `page.html.txt`). The extension is judged as a browser saves the name, without
 * trailing dots and blanks (`x.html.` is saved as `x.html`). No sniffed type is one of those
 * (lib/files/sniff.ts never yields HTML, SVG or script).
 */
export function servedName(name: string, mime: string): string {
  const clean = cleanFileName(name) ?? fallbackName('file', mime);
  const saved = clean.replace(/[.\s]+$/u, '');
  return ACTIVE_EXTENSION.test(saved) ? `${saved}.${extensionOf(mime)}` : clean;
}

/**
 * A Content-Disposition value naming the file (RFC 6266: ASCII fallback plus the UTF-8 form).
 * The name is cleaned again, so one stored before the rules tightened cannot smuggle a bidi override.
 */
export function contentDisposition(
  name: string,
  disposition: 'inline' | 'attachment' = 'inline',
): string {
  const clean = cleanFileName(name) ?? 'file';
  const ascii = clean.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(clean)}`;
}
