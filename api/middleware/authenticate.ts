/** Bearer-key authentication (spec "Authentication", D6): one indexed lookup by hash, nothing cached so revocation is immediate. */
import type { Middleware } from 'koa';
import type { Collections } from '../../store/db';
import { findLiveKey } from '../../store/accounts';
import type { RateLimitOverrides } from '../../store/documents';
import { AuthenticationError } from '../errors';

export interface AuthContext {
  accountId: string;
  keyId: string;
  /** The account's D16 limits as copied onto the key; null: the configured defaults. */
  rateLimits: RateLimitOverrides | null;
}

/** Koa middleware that sets `ctx.state.auth` or answers 401 `invalid_api_key`. */
export function authenticate(collections: Pick<Collections, 'apiKeys'>): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    const key = match ? await findLiveKey(collections, match[1]) : null;
    if (!key) throw new AuthenticationError();
    ctx.state.auth = { accountId: key.account_id, keyId: key._id, rateLimits: key.rate_limits ?? null } satisfies AuthContext;
    await next();
  };
}
