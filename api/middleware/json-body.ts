/**
 * JSON request bodies, read defensively (D10): the size limit is enforced before parsing (by
 * Content-Length and while streaming), bytes must be valid UTF-8, and nesting is bounded so a
 * hostile body cannot exhaust the stack of anything that walks it later.
 */
import type { Middleware } from 'koa';
import { InvalidRequestError } from '../errors';

export interface JsonBodyOptions {
  limitBytes: number;
  maxDepth: number;
}

// `Connection: close`: the rest of the body is never read, so the socket must not wait for it.
const tooLarge = (limit: number) =>
  new InvalidRequestError(`Request body is larger than the ${limit} byte limit.`, {
    status: 413,
    code: 'request_too_large',
    headers: { Connection: 'close' },
  });

/** Koa middleware that parses a JSON body into `ctx.request.body`. */
export function jsonBody(opts: JsonBodyOptions): Middleware {
  return async (ctx, next) => {
    const type = ctx.get('content-type');
    if (!/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
      throw new InvalidRequestError('Content-Type must be application/json.', { status: 415, code: 'unsupported_media_type' });
    }
    const declared = Number(ctx.get('content-length') || '0');
    if (declared > opts.limitBytes) throw tooLarge(opts.limitBytes);
    const bytes = await readAtMost(ctx.req, opts.limitBytes);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new InvalidRequestError('Request body is not valid UTF-8.', { code: 'invalid_json' });
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      throw new InvalidRequestError(`Request body is not valid JSON: ${(err as Error).message}`, { code: 'invalid_json' });
    }
    if (depthExceeds(body, opts.maxDepth)) {
      throw new InvalidRequestError(`Request body nests deeper than ${opts.maxDepth} levels.`, { code: 'invalid_json' });
    }
    ctx.request.body = body;
    await next();
  };
}

async function readAtMost(stream: AsyncIterable<Buffer>, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Iterative (no recursion, so no stack overflow on hostile input) depth check. */
export function depthExceeds(value: unknown, maxDepth: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > maxDepth) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}
