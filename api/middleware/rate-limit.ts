/**
 * D16 rate limits, applied right after `authenticate` on every authenticated route: per API key,
 * fixed one-minute windows kept in MongoDB (so every API process shares the count), one round
 * trip per request, or per burst of concurrent requests, or per lease of a busy key's next
 * requests (RateCounter). Starts and all other
 * requests are separate buckets. The `X-RateLimit-*`
 * headers are set before anything downstream runs, so every authenticated answer carries them,
 * errors and streams included; a refused request goes no further (a refused start starts and
 * bills nothing).
 */
import type { Context, Middleware } from 'koa';
import type { Config } from '../../config';
import type { RateLimitOverrides } from '../../store/documents';
import type { RateLimitBucket } from '../../store/rate-limits';
import { RateLimitError } from '../../domain/errors';
import type { RateCounter } from '../limits/rate-counter';
import type { AuthContext } from '../auth/auth-context';

export interface RateLimitDeps {
  rateCounter: RateCounter;
  config: Pick<Config, 'api'>;
}

/** The limit of a bucket for a key: the account's own (copied onto the key), else the configured default. */
export function limitFor(
  bucket: RateLimitBucket,
  overrides: RateLimitOverrides | null,
  defaults: Config['api']['rateLimits'],
): number {
  return bucket === 'starts'
    ? (overrides?.starts_per_minute ?? defaults.startsPerMinute)
    : (overrides?.requests_per_minute ?? defaults.requestsPerMinute);
}

/** Koa middleware counting the request in `bucket` of the caller's key; 429 `rate_limit_exceeded` over the limit. */
export function rateLimit(deps: RateLimitDeps, bucket: RateLimitBucket): Middleware {
  return async (ctx, next) => {
    const auth: AuthContext = ctx.state.auth!; // mounted after authenticate
    const limit = limitFor(bucket, auth.rateLimits, deps.config.api.rateLimits);
    await countRequest(ctx, deps, { counter: auth.keyId, bucket, limit, whose: 'this API key' });
    await next();
  };
}

/**
 * Counts one request in `bucket` of `counter` (a key id, or a key's stream links), with the
 * X-RateLimit-* headers; 429 `rate_limit_exceeded` past `limit`.
 */
export async function countRequest(
  ctx: Context,
  deps: RateLimitDeps,
  of: { counter: string; bucket: RateLimitBucket; limit: number; whose: string },
): Promise<void> {
  const { counter, bucket, limit, whose } = of;
  const now = Date.now();
  const { count, windowEndMs } = await deps.rateCounter.count(counter, bucket, limit, now);
  // Whole seconds until the window resets, at least 1 so a client never retries at once.
  const resetSeconds = String(Math.max(1, Math.ceil((windowEndMs - now) / 1000)));
  ctx.set('X-RateLimit-Limit', String(limit));
  ctx.set('X-RateLimit-Remaining', String(Math.max(0, limit - count)));
  ctx.set('X-RateLimit-Reset', resetSeconds);
  if (count > limit) {
    const what = bucket === 'starts' ? 'run starts' : 'requests';
    throw new RateLimitError(
      `Rate limit exceeded: ${limit} ${what} per minute for ${whose}. Retry in ${resetSeconds} s.`,
      Number(resetSeconds),
    );
  }
}
