/**
 * Reads an answer's body into memory up to a byte cap. Every answer the worker holds whole (a
 * provider's JSON, an `http_request` node's JSON or text) is read through here, so a hostile or
 * broken server cannot exhaust the worker's memory with an endless or huge body: past the cap the
 * stream is destroyed (its connection closed) while reading, never buffered first. Files are
 * streamed into storage instead, bounded there by MAX_UPLOAD_BYTES (store/files.ts). All the
 * answers a worker reads at once share one budget besides (lib/net/read-budget.ts).
 */
import type { Readable } from 'node:stream';
import type { ReadBudget } from './read-budget';

/** The default of MAX_ANSWER_BYTES (config/index.ts): far above any real JSON answer, far below a worker's memory. */
export const DEFAULT_MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** An answer was larger than the cap: the same request would send it again, so retrying cannot help. */
export class AnswerTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`the answer is over the ${limitBytes} byte limit (MAX_ANSWER_BYTES)`);
    this.name = 'AnswerTooLargeError';
  }
}

/**
 * The body's bytes, at most `maxBytes` of them. A declared Content-Length over the cap is refused
 * before reading; a body that grows past it is destroyed at the chunk that crosses it. Sharing a
 * `budget` (lib/net/read-budget.ts), each chunk is taken from the worker's budget of answer bytes
 * as it arrives (reading pauses while it is spent) and given back once the body is read.
 */
export async function readLimited(
  body: Readable,
  maxBytes: number,
  declaredLength?: string | number,
  share?: { budget: ReadBudget; signal?: AbortSignal },
): Promise<Buffer> {
  if (Number(declaredLength ?? 0) > maxBytes) {
    body.destroy();
    throw new AnswerTooLargeError(maxBytes);
  }
  const reader = share?.budget.reader();
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        body.destroy();
        throw new AnswerTooLargeError(maxBytes);
      }
      await reader?.take(chunk.byteLength, share?.signal);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  } finally {
    reader?.done();
  }
}
