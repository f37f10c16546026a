/**
 * D32: Temporal's codec-server endpoints, so operators read sealed payloads in the Temporal UI
 * and CLI (`--codec-endpoint`). Only holders of the operators' token (CODEC_TOKEN) get answers:
 * these endpoints open every account's data. The token comes as `Authorization: Bearer <token>`
 * (the Temporal CLI's `--codec-auth`, a proxy in front of the UI) or as a path segment,
 * `/codec/<token>/decode`, for a Temporal UI that can be given an endpoint URL but no header: its
 * "Codec Server browser endpoint", kept in the operator's browser. Never a UI server's configured
 * endpoint or a command-line flag: the UI serves the former to anyone and `ps` shows the latter
 * (docs/deploy.md "The codec server"). The path form is never logged (codecLogPath).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import { ValueError } from '@temporalio/common';
import type { Middleware } from 'koa';
import type { Config } from '../../config';
import { PayloadsJsonSchema, payloadsFromJson, payloadsToJson } from '../../lib/codec/json';
import type { EncryptionCodec } from '../../lib/codec/payload-codec';
import {
  AuthenticationError,
  InvalidRequestError,
  ServiceUnavailableError,
} from '../../domain/errors';
import { authorizationHeader } from '../auth/authorization-header';
import { jsonBody } from '../middleware/json-body';
import { codecLogPath } from '../middleware/request-log';

/** A page of history payloads can be large (each payload up to 2 MB); the UI sends one event's at a time. */
const CODEC_BODY_BYTES = 16 * 1024 * 1024;

export interface CodecRouteDeps {
  config: Pick<Config, 'codec' | 'api'>;
  /** Absent when PAYLOAD_ENCRYPTION=false: the endpoints then answer 503. */
  codec?: EncryptionCodec;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Refuses a request that does not carry the operators' token (compared in constant time). */
function requireCodecToken(token: string | undefined): Middleware {
  const expected = token ? digest(token) : undefined;
  return async (ctx, next) => {
    ctx.state.logPath = codecLogPath(ctx.path); // never the token form's path
    const header = /^Bearer\s+(\S+)$/i.exec(authorizationHeader(ctx, 'invalid_codec_token'))?.[1];
    const given = (ctx as { params?: Record<string, string> }).params?.token ?? header;
    if (!expected || !given || !timingSafeEqual(digest(given), expected)) {
      throw new AuthenticationError(
        "The codec server needs the operators' token (CODEC_TOKEN) as `Authorization: Bearer <token>`.",
        'invalid_codec_token',
      );
    }
    await next();
  };
}

/** POST /codec/decode and /codec/encode (and the same under /codec/<token>/). */
export function codecRoutes(deps: CodecRouteDeps): Router {
  const router = new Router();
  const body = jsonBody({ limitBytes: CODEC_BODY_BYTES, maxDepth: deps.config.api.maxJsonDepth });
  const auth = requireCodecToken(deps.config.codec.token);
  for (const op of ['decode', 'encode'] as const) {
    const handler: Middleware = async (ctx) => {
      const parsed = PayloadsJsonSchema.safeParse(ctx.request.body);
      if (!parsed.success)
        throw new InvalidRequestError(
          'The body must be {"payloads": [{"metadata": {...}, "data": "<base64>"}]}.',
          { code: 'invalid_payloads' },
        );
      const { codec } = deps;
      if (!codec)
        throw new ServiceUnavailableError(
          'Payload encryption is off (PAYLOAD_ENCRYPTION=false): there is nothing to decode.',
        );
      try {
        const payloads = payloadsFromJson(parsed.data);
        ctx.body = payloadsToJson(
          // D39: a deleted run's payloads come back still sealed; the rest of its history reads.
          await (op === 'decode' ? codec.decodeForOperators(payloads) : codec.encode(payloads)),
        );
      } catch (err) {
        // An unknown key id or a payload that fails authentication: the operator's input, not our fault.
        if (err instanceof ValueError) {
          throw new InvalidRequestError(`Cannot ${op} the payloads: ${err.message}`, {
            code: 'undecodable_payload',
          });
        }
        throw err;
      }
    };
    router.post(`/codec/${op}`, auth, body, handler);
    router.post(`/codec/:token/${op}`, auth, body, handler);
  }
  return router;
}

/** The CORS origin for a codec-server request: the request's origin when configured, else none (no CORS headers). */
export function codecCorsOrigin(allowed: readonly string[], requestOrigin: string): string {
  return allowed.includes(requestOrigin) ? requestOrigin : '';
}
