/**
 * Bearer-key authentication (spec "Authentication", D6): keys are found by the hash of the
 * presented secret, through the process's KeyCache (api/auth/key-cache.ts) when it has one.
 */
import type { Middleware } from 'koa';
import type { Collections } from '../../store/db';
import { findLiveKey } from '../../store/accounts';
import { AuthenticationError } from '../../domain/errors';
import type { AuthContext } from '../auth/auth-context';
import { authorizationHeader } from '../auth/authorization-header';
import type { KeyCache } from '../auth/key-cache';

export interface AuthenticateDeps {
  collections: Pick<Collections, 'apiKeys' | 'apiKeyHashes'>;
  keys?: KeyCache;
}

/** Koa middleware that sets `ctx.state.auth` or answers 401 `invalid_api_key` (also for two Authorization headers). */
export function authenticate(deps: AuthenticateDeps): Middleware {
  return async (ctx, next) => {
    const header = authorizationHeader(ctx);
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    const key = match
      ? await (deps.keys ? deps.keys.find(match[1]) : findLiveKey(deps.collections, match[1]))
      : null;
    if (!key) throw new AuthenticationError();
    ctx.state.auth = {
      accountId: key.account_id,
      keyId: key._id,
      rateLimits: key.rate_limits ?? null,
    } satisfies AuthContext;
    await next();
  };
}
