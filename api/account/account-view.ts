/**
 * D41: what an account has, as its own caller reads it (GET /api/v1/account): its credit (balance,
 * held by runs in progress, available to start runs) and its two storage quotas. Every figure comes
 * from what the gates already remember (the credit gate's sums, the quotas' sums), so reading it in
 * a loop costs the store no more than the starts and uploads it describes.
 */
import type { Collections } from '../../store/db';
import type { StorageQuota } from '../../store/storage-quota';
import { findAccount } from '../../store/accounts';
import type { CreditCheck } from '../limits/credit-check';
import type { AccountView } from '../contract/response-schemas';

export interface AccountViewDeps {
  collections: Pick<Collections, 'accounts'>;
  credits: Pick<CreditCheck, 'credit'>;
  fileQuota: Pick<StorageQuota, 'room'>;
  workflowQuota: Pick<StorageQuota, 'room'>;
}

/** The caller's account as the API shows it. */
export async function accountView(deps: AccountViewDeps, accountId: string): Promise<AccountView> {
  const [account, credit, files, workflows] = await Promise.all([
    findAccount(deps.collections, accountId),
    deps.credits.credit(accountId),
    deps.fileQuota.room(accountId),
    deps.workflowQuota.room(accountId),
  ]);
  // Accounts are never deleted, and a key is issued only for one that exists.
  if (!account) throw new Error(`account ${accountId} of a live key is missing`);
  return {
    id: account._id,
    object: 'account',
    name: account.name,
    credits: credit,
    file_storage: { used_bytes: files.used, quota_bytes: files.quota },
    workflow_storage: { used_bytes: workflows.used, quota_bytes: workflows.quota },
  };
}
