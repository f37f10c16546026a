/** D17's start gate: 402 at or below zero, positive balances remembered briefly, zero never remembered. */
import assert from 'node:assert/strict';
import { CreditCheck, STALE_LIMIT_MS } from '../../../api/services/credit-check';
import { InsufficientCreditsError } from '../../../domain/errors';
import { addCredits, createAccount } from '../../../store/accounts';
import {
  accountBalance,
  balanceFrom,
  CHECKPOINT_LAG_MS,
  latestCheckpoint,
  postEntry,
  writeCheckpoint,
} from '../../../store/ledger';
import type { Store } from '../../../store/db';
import { countingCalls } from '../../support/counting';
import { waitFor } from '../../support/http';
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

  it('remembers a positive balance for its time to live, re-sums it off the path a while after, then sees the debit', async () => {
    const account = await createAccount(store.collections, { name: 'spender', creditsUsd: 1 });
    const { collection: ledger, probe } = countingCalls(store.collections.ledger, 'aggregate');
    const check = new CreditCheck(
      { ledger, ledgerCheckpoints: store.collections.ledgerCheckpoints },
      1_000,
    );
    await check.assertCanStart(account._id, 0);
    await waitFor(async () => (check.checkpointing === 0 ? true : undefined), {
      what: 'the first checkpoint',
    });
    const sums = probe.calls;
    await postEntry(store.collections, {
      _id: 'led_spent_all',
      account_id: account._id,
      kind: 'run',
      run_id: null,
      amount_usd: -1,
      note: null,
    });
    await check.assertCanStart(account._id, 999); // fresh: no ledger read
    assert.equal(probe.calls, sums);
    await check.assertCanStart(account._id, 1_000); // stale: admitted while a new sum runs
    assert.equal(probe.calls, sums + 1);
    await waitFor(
      async () =>
        (await check.assertCanStart(account._id, 1_001).then(
          () => undefined,
          (err) => err,
        )) as Error | undefined,
      { what: 'the debit to be seen' },
    );
    await assert.rejects(check.assertCanStart(account._id, 1_002), InsufficientCreditsError);
  });

  it('waits for the sum once a positive balance is more than STALE_LIMIT_MS past its time to live', async () => {
    const account = await createAccount(store.collections, { name: 'idle', creditsUsd: 1 });
    const check = new CreditCheck(store.collections, 1_000);
    await check.assertCanStart(account._id, 0);
    await postEntry(store.collections, {
      _id: 'led_spent_idle',
      account_id: account._id,
      kind: 'run',
      run_id: null,
      amount_usd: -1,
      note: null,
    });
    await assert.rejects(
      check.assertCanStart(account._id, 1_000 + STALE_LIMIT_MS),
      InsufficientCreditsError,
    );
  });

  it('sums the ledger once for many concurrent starts of one account', async () => {
    const account = await createAccount(store.collections, { name: 'busy', creditsUsd: 1 });
    const { collection: ledger, probe } = countingCalls(store.collections.ledger, 'aggregate');
    const check = new CreditCheck({
      ledger,
      ledgerCheckpoints: store.collections.ledgerCheckpoints,
    });
    await Promise.all(Array.from({ length: 32 }, () => check.assertCanStart(account._id, 0)));
    assert.equal(probe.calls, 2); // one sum, and the one of the account's first checkpoint (written once, off the path)
    await waitFor(async () => (check.checkpointing === 0 ? true : undefined), {
      what: 'the checkpoint write',
    });
    // The shared sum is gone once answered: after the time to live the next start sums afresh.
    await check.assertCanStart(account._id, 5_000);
    assert.equal(probe.calls, 3);
  });

  it('sums only the entries after the newest checkpoint, and writes the next one off the start path', async () => {
    const account = await createAccount(store.collections, { name: 'long ledger', creditsUsd: 0 });
    const old = new Date(Date.now() - 2 * CHECKPOINT_LAG_MS);
    const entries = Array.from({ length: 500 }, (_, i) => ({
      _id: `led_old_${account._id}_${i}`,
      account_id: account._id,
      kind: 'credit' as const,
      run_id: null,
      amount_usd: 0.01,
      note: null,
      created_at: old,
    }));
    await store.collections.ledger.insertMany(entries);
    await postEntry(store.collections, {
      _id: `led_new_${account._id}`,
      account_id: account._id,
      kind: 'run',
      run_id: null,
      amount_usd: -0.5,
      note: null,
    });
    const check = new CreditCheck(store.collections, 0);
    await check.assertCanStart(account._id); // 5 - 0.5 > 0; the account has no checkpoint yet: one is written
    await waitFor(async () => (check.checkpointing === 0 ? true : undefined), {
      what: 'the checkpoint write',
    });
    const chk = await latestCheckpoint(store.collections, account._id);
    assert.equal(chk?.n, 1);
    assert.equal(chk?.total_usd, 5); // the old entries, not the recent debit (newer than the checkpoint's lag)
    // Now a sum covers the debit alone, and still says the same balance.
    assert.equal(await balanceFrom(store.collections, account._id, chk), 4.5);
    assert.equal(await accountBalance(store.collections, account._id), 4.5);
    // Another process writing checkpoint 1 again loses the id and adopts the winner's.
    assert.equal((await writeCheckpoint(store.collections, account._id, null))?.n, 1);
    assert.equal(
      await store.collections.ledgerCheckpoints.countDocuments({ account_id: account._id }),
      1,
    );
    // Spending it all is seen through the checkpoint (by another process, which reads the newest one).
    await postEntry(store.collections, {
      _id: `led_all_${account._id}`,
      account_id: account._id,
      kind: 'run',
      run_id: null,
      amount_usd: -4.5,
      note: null,
    });
    await assert.rejects(
      new CreditCheck(store.collections).assertCanStart(account._id),
      InsufficientCreditsError,
    );
  });
});
