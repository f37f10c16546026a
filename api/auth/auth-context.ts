/** Who a request acts for, once its key is found: what `ctx.state.auth` holds (D6, D16). */
import type { RateLimitOverrides } from '../../store/documents';

export interface AuthContext {
  accountId: string;
  keyId: string;
  /** The account's D16 limits as copied onto the key; null: the configured defaults. */
  rateLimits: RateLimitOverrides | null;
}
