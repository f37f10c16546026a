/**
 * Calls to the API. Every path is relative, so the key in `Authorization` only ever goes to the
 * page's own origin (the CSP's `connect-src 'self'` enforces it too). The key lives in
 * sessionStorage: it is gone when the tab closes, and never written anywhere else.
 */
const KEY_ITEM = 'wrs.playground.apiKey';

export const apiKey = {
  get: (): string => sessionStorage.getItem(KEY_ITEM) ?? '',
  set: (key: string) =>
    key ? sessionStorage.setItem(KEY_ITEM, key) : sessionStorage.removeItem(KEY_ITEM),
};

export const authHeaders = (): Record<string, string> => ({
  Authorization: `Bearer ${apiKey.get()}`,
});

/** An error answer of the API: the envelope's fields (D22). */
export class ErrorAnswer extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly details: Array<{ field: string; problem: string }> = [],
  ) {
    super(message);
  }

  /** Worth retrying the same request later: rate limited or the service's backends briefly away. */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/** Turns a non-2xx answer (or an envelope text) into an ErrorAnswer. */
export function errorAnswer(status: number, text: string): ErrorAnswer {
  try {
    const e = JSON.parse(text).error;
    if (e?.message) return new ErrorAnswer(status, e.message, e.code, e.details);
  } catch {
    // not an envelope: a proxy's page, say
  }
  return new ErrorAnswer(status, `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`);
}

/** A JSON call with the key; throws ErrorAnswer on any non-2xx answer. */
export async function api<T>(
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: {
      ...authHeaders(),
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw errorAnswer(res.status, await res.text());
  return (await res.json()) as T;
}

/**
 * D35: an output's results file as CSV, saved by the browser as `<run id>-<key>.csv`. The key goes
 * in a header, so a plain link cannot fetch it: the file is read into a Blob and saved from there.
 */
export async function downloadCsv(runId: string, key: string): Promise<void> {
  const res = await fetch(
    `/api/v1/runs/${encodeURIComponent(runId)}/outputs/${encodeURIComponent(key)}`,
    { headers: { ...authHeaders(), Accept: 'text/csv' } },
  );
  if (!res.ok) throw errorAnswer(res.status, await res.text());
  const url = URL.createObjectURL(await res.blob());
  const link = Object.assign(document.createElement('a'), {
    href: url,
    download: `${runId}-${key}.csv`,
  });
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000); // the save has the Blob by then
}

export interface UploadedFile {
  id: string;
  name: string;
  mime_type: string;
  size: number;
  url: string;
}

/**
 * POST /api/v1/files with the raw bytes. XMLHttpRequest, not fetch: only it reports upload
 * progress, which a large video needs.
 */
export function upload(
  file: File,
  onProgress: (fraction: number) => void,
): { done: Promise<UploadedFile>; abort(): void } {
  const xhr = new XMLHttpRequest();
  const done = new Promise<UploadedFile>((resolve, reject) => {
    xhr.open('POST', `/api/v1/files?name=${encodeURIComponent(file.name)}`);
    for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
    xhr.setRequestHeader('Content-Type', file.type || 'application/octet-stream');
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () =>
      xhr.status === 201
        ? resolve(JSON.parse(xhr.responseText))
        : reject(errorAnswer(xhr.status, xhr.responseText));
    xhr.onerror = () => reject(new Error('The upload failed: the connection was lost.'));
    xhr.onabort = () => reject(new Error('The upload was cancelled.'));
    xhr.send(file);
  });
  return { done, abort: () => xhr.abort() };
}
