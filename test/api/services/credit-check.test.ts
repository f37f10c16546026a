/** D17's start gate: 402 at or below zero, positive balances remembered briefly, zero never remembered. */
import assert from 'node:assert/strict';
import { CreditCheck } from '../../../api/services/credit-check';
import { InsufficientCreditsError } from '../../../api/errors';
import { addCredits, createAccount } from '../../../store/accounts';
import { postEntry } from '../../../store/ledger';
import type { Store } from '../../../store/db';
import { countingCalls } from '../../support/counting';
import { connectTestStore } from '../../support/store';

describe('CreditCheck (D17)', () => {
  let store: Store;
  before(async () => (store = await connectTestStore()));
  after(async () => store?.close());

  it('refuses an account at zero and lets it start the moment it is topped up', async () => {
    const account = await createAccount(store.collections, { name: 'broke', creditsUsd: 0 });
    const check = new CreditCheck(store.collections);
    await assert.rejects(check.assertCanStart(account._id), InsufficientCreditsError);
    await addCredits(store.collections, account._id, 1);
    await check.assertCanStart(account._id);
  });

  it('remembers a positive balance for its time to live only, then sees the debit', async () => {
    const account = await createAccount(store.collections, { name: 'spender', creditsUsd: 1 });
    const check = new CreditCheck(store.collections, 1_000);
    await check.assertCanStart(account._id, 0);
    await postEntry(store.collections, { _id: 'led_spent_all', account_id: account._id, kind: 'run', run_id: null, amount_usd: -1, note: null });
    await check.assertCanStart(account._id, 999); // still remembered: no ledger read
    await assert.rejects(check.assertCanStart(account._id, 1_000), InsufficientCreditsError);
  });

  it('sums the ledger once for many concurrent starts of one account', async () => {
    const account = await createAccount(store.collections, { name: 'busy', creditsUsd: 1 });
    const { collection: ledger, probe } = countingCalls(store.collections.ledger, 'aggregate');
    const check = new CreditCheck({ ledger });
    await Promise.all(Array.from({ length: 32 }, () => check.assertCanStart(account._id, 0)));
    assert.equal(probe.calls, 1);
    // The shared sum is gone once answered: after the time to live the next start sums afresh.
    await check.assertCanStart(account._id, 5_000);
    assert.equal(probe.calls, 2);
  });
});
