/** Accounts, their API keys (D6) and credits. */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { Collections } from './db';
import type { AccountDoc, ApiKeyDoc, RateLimitOverrides } from './documents';
import { generateId } from './ids';
import { isDuplicateKey, postEntry } from './ledger';

const KEY_PREFIX = 'wrs_sk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RANDOM_CHARS = 40; // D6 asks for at least 32; 40 base62 chars carry ~238 bits

/** SHA-256 hex of a presented secret: keys are found by this hash, never by comparing secrets (D6). */
export function hashKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** A new D20 webhook signing secret: `whsec_` + base64 of 24 random bytes (the Standard Webhooks format). */
export function newWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(24).toString('base64');
}

/** The account's webhook secret, made now for an account created before webhooks existed; null without such an account. */
export async function webhookSecret(
  c: Pick<Collections, 'accounts'>,
  accountId: string,
): Promise<string | null> {
  const account = await c.accounts.findOne(
    { _id: accountId },
    { projection: { webhook_secret: 1 } },
  );
  if (!account) return null;
  if (account.webhook_secret) return account.webhook_secret;
  // Guarded by absence, so of two concurrent first uses one secret wins and both read it back.
  await c.accounts.updateOne(
    { _id: accountId, webhook_secret: { $exists: false } },
    { $set: { webhook_secret: newWebhookSecret() } },
  );
  return (
    (await c.accounts.findOne({ _id: accountId }, { projection: { webhook_secret: 1 } }))
      ?.webhook_secret ?? null
  );
}

/** Replaces the account's webhook secret; deliveries signed from now on (retries included) use the new one. */
export async function rotateWebhookSecret(
  c: Pick<Collections, 'accounts'>,
  accountId: string,
): Promise<string> {
  const secret = newWebhookSecret();
  const res = await c.accounts.updateOne({ _id: accountId }, { $set: { webhook_secret: secret } });
  if (res.matchedCount !== 1) throw new Error(`no account ${accountId}`);
  return secret;
}

/** Creates an account with an opening balance (booked as a credit entry so the ledger explains every cent). */
export async function createAccount(
  c: Collections,
  opts: { name: string; creditsUsd?: number },
): Promise<AccountDoc> {
  const account: AccountDoc = {
    _id: generateId('acct'),
    name: opts.name,
    webhook_secret: newWebhookSecret(), // D20
    created_at: new Date(),
  };
  await c.accounts.insertOne(account);
  if (opts.creditsUsd) await addCredits(c, account._id, opts.creditsUsd, 'opening balance');
  return (await c.accounts.findOne({ _id: account._id }))!;
}

/**
 * Adds (or, negative, removes) credits through the ledger. A removal is counted on the account
 * after its entry is booked (`credit_removals`), so a process that sees the count changed and sums
 * again counts the entry.
 */
export async function addCredits(
  c: Collections,
  accountId: string,
  amountUsd: number,
  note: string | null = null,
): Promise<void> {
  if (!(await c.accounts.findOne({ _id: accountId }, { projection: { _id: 1 } }))) {
    throw new Error(`no account ${accountId}`);
  }
  await postEntry(c, {
    _id: generateId('led'),
    account_id: accountId,
    kind: 'credit',
    run_id: null,
    amount_usd: amountUsd,
    note,
  });
  if (amountUsd < 0)
    await c.accounts.updateOne({ _id: accountId }, { $inc: { credit_removals: 1 } });
}

/** D17: how many times the account's credit was taken away (AccountDoc.credit_removals), by `_id`. */
export async function creditRemovals(
  c: Pick<Collections, 'accounts'>,
  accountId: string,
): Promise<number> {
  const doc = await c.accounts.findOne({ _id: accountId }, { projection: { credit_removals: 1 } });
  return doc?.credit_removals ?? 0;
}

/** Issues a new key; the secret is returned here and never again (D6). */
export async function issueKey(
  c: Collections,
  accountId: string,
  name: string | null = null,
): Promise<{ secret: string; key: ApiKeyDoc }> {
  let random = '';
  for (let i = 0; i < KEY_RANDOM_CHARS; i++) random += BASE62[randomInt(0, BASE62.length)];
  const secret = KEY_PREFIX + random;
  const account = await c.accounts.findOne({ _id: accountId }, { projection: { rate_limits: 1 } });
  const key: ApiKeyDoc = {
    _id: generateId('key'),
    account_id: accountId,
    hash: hashKey(secret),
    hint: secret.slice(0, KEY_PREFIX.length + 4),
    name,
    created_at: new Date(),
    revoked_at: null,
    rate_limits: account?.rate_limits ?? null, // D16: authentication reads them from the key
  };
  await c.apiKeys.insertOne(key);
  await c.apiKeyHashes.insertOne({ _id: key.hash, key_id: key._id });
  // Limits changed between our read and our insert missed this key: look once more.
  const after = await c.accounts.findOne({ _id: accountId }, { projection: { rate_limits: 1 } });
  if (!sameLimits(after?.rate_limits ?? null, key.rate_limits ?? null)) {
    key.rate_limits = after?.rate_limits ?? null;
    await c.apiKeys.updateOne({ _id: key._id }, { $set: { rate_limits: key.rate_limits } });
  }
  return { secret, key };
}

/** A change of an account's D16 limits: a number sets one, null returns it to the default, absent keeps it. */
export interface RateLimitChange {
  starts_per_minute?: number | null;
  requests_per_minute?: number | null;
}

/**
 * Changes an account's rate limits (D16) and copies them onto every key of the account, so the
 * per-request check needs no query beyond the key lookup. Returns the limits now in force.
 */
export async function setAccountRateLimits(
  c: Pick<Collections, 'accounts' | 'apiKeys'>,
  accountId: string,
  change: RateLimitChange,
): Promise<RateLimitOverrides | null> {
  const account = await c.accounts.findOne({ _id: accountId }, { projection: { rate_limits: 1 } });
  if (!account) throw new Error(`no account ${accountId}`);
  const merged: RateLimitOverrides = { ...account.rate_limits };
  for (const field of ['starts_per_minute', 'requests_per_minute'] as const) {
    const value = change[field];
    if (value === null) delete merged[field];
    else if (value !== undefined) merged[field] = value;
  }
  const limits = Object.keys(merged).length > 0 ? merged : null;
  // Account first: a key issued meanwhile reads it after its own insert (issueKey), so none is missed.
  await c.accounts.updateOne({ _id: accountId }, { $set: { rate_limits: limits } });
  await c.apiKeys.updateMany({ account_id: accountId }, { $set: { rate_limits: limits } });
  return limits;
}

/**
 * An account's own caps, set by operators (`wrs accounts ...`): its provider calls in flight per
 * worker (D36), what its files may hold (D19) and what its published workflows may hold (D26).
 * Null: the operator's default applies.
 */
export type AccountCap =
  'max_provider_calls' | 'max_file_storage_bytes' | 'max_workflow_storage_bytes';

/** The account's own value of `cap`, or null (the operator's default applies). */
export async function accountCap(
  c: Pick<Collections, 'accounts'>,
  accountId: string,
  cap: AccountCap,
): Promise<number | null> {
  const account = await c.accounts.findOne({ _id: accountId }, { projection: { [cap]: 1 } });
  return account?.[cap] ?? null;
}

/** Sets (a number) or clears (null: back to the operator's default) the account's own `cap`. */
export async function setAccountCap(
  c: Pick<Collections, 'accounts'>,
  accountId: string,
  cap: AccountCap,
  value: number | null,
): Promise<void> {
  const res = await c.accounts.updateOne({ _id: accountId }, { $set: { [cap]: value } });
  if (res.matchedCount !== 1) throw new Error(`no account ${accountId}`);
}

function sameLimits(a: RateLimitOverrides | null, b: RateLimitOverrides | null): boolean {
  return (
    a?.starts_per_minute === b?.starts_per_minute &&
    a?.requests_per_minute === b?.requests_per_minute
  );
}

/** The live key record for a presented secret, or null (unknown or revoked). */
export async function findLiveKey(
  c: Pick<Collections, 'apiKeys' | 'apiKeyHashes'>,
  secret: string,
): Promise<ApiKeyDoc | null> {
  if (!secret.startsWith(KEY_PREFIX) || secret.length > 256) return null;
  // Both by exact `_id`, revocation compared here: the one filter FerretDB does not answer by
  // decoding every document (ApiKeyHashDoc).
  const entry = await c.apiKeyHashes.findOne({ _id: hashKey(secret) });
  const key = entry && (await c.apiKeys.findOne({ _id: entry.key_id }));
  return key && key.revoked_at === null ? key : null;
}

/** True while key `keyId` exists and is not revoked (signed links and open streams minted with it, D6). */
export async function isKeyLive(c: Pick<Collections, 'apiKeys'>, keyId: string): Promise<boolean> {
  const key = await c.apiKeys.findOne({ _id: keyId }, { projection: { revoked_at: 1 } });
  return key !== null && key.revoked_at === null;
}

/**
 * D6: the hash entry of every key issued before keys were found by it, written as a store opens
 * (a scan of the keys, once a process; a key issued since has its entry already).
 */
export async function indexKeyHashes(
  c: Pick<Collections, 'apiKeys' | 'apiKeyHashes'>,
): Promise<void> {
  const indexed = new Set(
    (await c.apiKeyHashes.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id),
  );
  const missing = (await c.apiKeys.find({}, { projection: { _id: 1, hash: 1 } }).toArray())
    .filter((key) => !indexed.has(key.hash))
    .map((key) => ({ _id: key.hash, key_id: key._id }));
  for (let i = 0; i < missing.length; i += 1_000)
    await c.apiKeyHashes
      .insertMany(missing.slice(i, i + 1_000), { ordered: false })
      .catch((err: unknown) => {
        // Another process opening at the same time wrote some of them: theirs are the same.
        const writeErrors = (err as { writeErrors?: Array<{ code?: number }> }).writeErrors;
        if (!isDuplicateKey(err) && !writeErrors?.every((e) => e.code === 11000)) throw err;
      });
}

/** Revokes a key; every API process refuses it within 2 s (D6: the longest an API process remembers a key). */
export async function revokeKey(c: Pick<Collections, 'apiKeys'>, keyId: string): Promise<boolean> {
  const res = await c.apiKeys.updateOne(
    { _id: keyId, revoked_at: null },
    { $set: { revoked_at: new Date() } },
  );
  return res.modifiedCount === 1;
}

/** An account by id, or null. */
export function findAccount(
  c: Pick<Collections, 'accounts'>,
  accountId: string,
): Promise<AccountDoc | null> {
  return c.accounts.findOne({ _id: accountId });
}

/** How many keys of the account are not revoked. */
export function countLiveKeys(c: Pick<Collections, 'apiKeys'>, accountId: string): Promise<number> {
  return c.apiKeys.countDocuments({ account_id: accountId, revoked_at: null });
}

/** A key record without its hash (an operator's view), or null. */
export function findKeyRecord(
  c: Pick<Collections, 'apiKeys'>,
  keyId: string,
): Promise<Omit<ApiKeyDoc, 'hash'> | null> {
  return c.apiKeys.findOne({ _id: keyId }, { projection: { hash: 0 } });
}

/** Every key of the account, oldest first, without hashes. */
export function listKeys(
  c: Pick<Collections, 'apiKeys'>,
  accountId: string,
): Promise<Omit<ApiKeyDoc, 'hash'>[]> {
  return c.apiKeys
    .find({ account_id: accountId }, { projection: { hash: 0 } })
    .sort({ _id: 1 })
    .toArray();
}
