import type { Collections } from '../../store/db';
import { createAccount, issueKey } from '../../store/accounts';

/** A fresh account with credits and a key, straight through the store (as the operator CLI does). */
export async function newAccount(
  collections: Collections,
  creditsUsd = 10,
): Promise<{ accountId: string; key: string; keyId: string }> {
  const account = await createAccount(collections, { name: 'test', creditsUsd });
  const { secret, key } = await issueKey(collections, account._id);
  return { accountId: account._id, key: secret, keyId: key._id };
}
