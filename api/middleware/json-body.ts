/**
 * JSON request bodies, read defensively (D10): the size limit is enforced before parsing (by
 * Content-Length and while streaming), bytes must be valid UTF-8, strings must be Unicode text,
 * and nesting is bounded so a hostile body cannot exhaust the stack of anything that walks it later.
 * A body its client cut off is the client's doing (errors/client-gone.ts): 400 `request_interrupted`.
 */
import type { Middleware } from 'koa';
import { formatPath } from '../../domain/problems';
import { InvalidRequestError } from '../../domain/errors';
import { depthExceeds, unfaithfulJson } from '../../domain/json-depth';
import { clientWentAway } from '../errors/client-gone';
import { HttpError } from '../errors/http-error';
import { assertIdentityEncoding } from './identity-encoding';

export interface JsonBodyOptions {
  limitBytes: number;
  maxDepth: number;
}

// `Connection: close`: the rest of the body is never read, so the socket must not wait for it.
const tooLarge = (limit: number) =>
  new HttpError(`Request body is larger than the ${limit} byte limit.`, {
    code: 'request_too_large',
    headers: { Connection: 'close' },
  });

/** Koa middleware that parses a JSON body into `ctx.request.body`. */
export function jsonBody(opts: JsonBodyOptions): Middleware {
  return async (ctx, next) => {
    const parameters = jsonMediaTypeParameters(ctx.get('content-type'));
    if (!parameters) {
      throw new InvalidRequestError('Content-Type must be application/json.', {
        code: 'unsupported_media_type',
      });
    }
    // JSON is UTF-8 (RFC 8259); a body said to be UTF-16 or Latin-1 would be read as something else.
    for (const [name, value] of parameters) {
      if (name === 'charset' && !/^utf-?8$/i.test(value)) {
        throw new InvalidRequestError(
          `Content-Type charset must be utf-8, not \`${value.slice(0, 32)}\`: JSON bodies are UTF-8.`,
          { code: 'unsupported_media_type' },
        );
      }
    }
    assertIdentityEncoding(ctx.req.headers);
    const declared = Number(ctx.get('content-length') || '0');
    if (declared > opts.limitBytes) throw tooLarge(opts.limitBytes);
    let bytes: Buffer;
    try {
      bytes = await readAtMost(ctx.req, opts.limitBytes);
    } catch (err) {
      if (clientWentAway(ctx.req, err))
        throw new InvalidRequestError('The request body was cut off: the connection closed.', {
          code: 'request_interrupted',
        });
      throw err;
    }
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
      throw new InvalidRequestError(`Request body is not valid JSON: ${(err as Error).message}`, {
        code: 'invalid_json',
      });
    }
    if (depthExceeds(body, opts.maxDepth)) {
      throw new InvalidRequestError(`Request body nests deeper than ${opts.maxDepth} levels.`, {
        code: 'invalid_json',
      });
    }
    // `"\ud800"` is valid JSON but no Unicode text: UTF-8 (the store, Temporal, every answer) turns it into
    // U+FFFD, silently changing values, and two such keys of one object collide (a 500 at insert).
    // A number past ±1.8e308 is left to the schemas, which name the field ("must be a finite number").
    const unpaired = unfaithfulJson(body, { numbers: false })?.path;
    if (unpaired) {
      const where = unpaired.length === 0 ? 'the body' : `\`${formatPath(unpaired)}\``;
      throw new InvalidRequestError(
        `Request body is not Unicode text: ${where} holds an unpaired UTF-16 surrogate escape (\`\\ud800\`-\`\\udfff\`).`,
        {
          code: 'invalid_json',
          ...(unpaired.length > 0 ? { param: formatPath(unpaired) } : {}),
        },
      );
    }
    ctx.request.body = body;
    await next();
  };
}

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const JSON_TYPE = /^application\/json(?=[ \t]*(;|$))/i;
/** One `;` and what follows it, RFC 9110 §5.6.6: an empty parameter is allowed, a name without a value is not. */
const PARAMETER = new RegExp(
  `^[ \\t]*;[ \\t]*(?:(${TOKEN})=(${TOKEN}|"(?:[^"\\\\]|\\\\.)*"))?[ \\t]*`,
);

/**
 * The parameters (names lower-cased, quoted values unquoted) of a Content-Type that is exactly
 * `application/json`, or undefined for any other type or a malformed one. `application/*+json`
 * types (`merge-patch+json`) are not: their bodies mean something else than the document this
 * API takes, and docs/api.md promises 415 for anything but application/json.
 */
export function jsonMediaTypeParameters(type: string): Array<[string, string]> | undefined {
  const match = JSON_TYPE.exec(type.trim());
  if (!match) return undefined;
  const parameters: Array<[string, string]> = [];
  let rest = type.trim().slice(match[0].length);
  while (rest) {
    const parameter = PARAMETER.exec(rest);
    if (!parameter || parameter[0].length === 0) return undefined;
    const [whole, name, value] = parameter;
    if (name)
      parameters.push([
        name.toLowerCase(),
        value.startsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value,
      ]);
    rest = rest.slice(whole.length);
  }
  return parameters;
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
