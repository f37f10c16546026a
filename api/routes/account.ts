/** GET /api/v1/account (D41): the caller's account, its credit and its storage quotas. */
import Router from '@koa/router';
import type { Collections } from '../../store/db';
import type { StorageQuota } from '../../store/storage-quota';
import type { GuardDeps } from '../deps';
import type { CreditCheck } from '../limits/credit-check';
import { authenticate } from '../middleware/authenticate';
import { rateLimit } from '../middleware/rate-limit';
import { accountView } from '../account/account-view';

/** What the account route uses: its guards and the gates whose remembered sums it shows. */
export type AccountRouteDeps = GuardDeps & {
  collections: Collections;
  credits: CreditCheck;
  fileQuota: StorageQuota;
  workflowQuota: StorageQuota;
};

/** The account route. */
export function accountRoutes(deps: AccountRouteDeps): Router {
  const router = new Router();
  router.get('/api/v1/account', authenticate(deps), rateLimit(deps, 'requests'), async (ctx) => {
    ctx.body = await accountView(deps, ctx.state.auth!.accountId);
  });
  return router;
}
