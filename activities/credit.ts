/** D17: the activity that grows a run's hold from the account's available credit (workflows/cost-cap.ts CreditSource). */
import type { HoldExtension } from '../domain/run';
import type { Collections } from '../store/db';
import { extendRunHold } from '../store/credit-holds';

export function createExtendHoldActivity(deps: { collections: Collections }) {
  /** Holds up to `wantUsd` more for the run; what it held (0: the account has nothing available). */
  return function extendRunHoldActivity(req: HoldExtension): Promise<number> {
    return extendRunHold(deps.collections, req);
  };
}
