/**
 * D17's start gate on the real store: holds reserved through the account's hold chain, exact
 * across processes (each CreditCheck is one API process's), 402 once nothing is available, a
 * top-up seen at once, leases for rich accounts, and the ledger's checkpoints carrying releases.
 */
import assert from 'node:assert/strict';
import { MongoNetworkError } from 'mongodb';
import { CreditCheck, LEASE_HOLDS } from '../../../api/limits/credit-check';
import { InsufficientCreditsError } from '../../../domain/errors';
import { addCredits, createAccount } from '../../../store/accounts';
import { accountCredit, findChainHead } from '../../../store/credit-holds';
import {
  accountBalance,
  balanceFrom,
  CHECKPOINT_LAG_MS,
  latestCheckpoint,
  postEntry,
  postRelease,
  roundUsd,
  sumsFrom,
  writeCheckpoint,
} from '../../../store/ledger';
import { countingCalls } from '../../support/counting';
import { waitFor } from '../../support/http';
import { useTestStore } from '../../support/store';

/** Settles every promise: how many were admitted, and that every refusal is the 402. */
async function outcomes(starts: Promise<void>[]): Promise<number> {
  const settled = await Promise.allSettled(starts);
  for (const s of settled)
    if (s.status === 'rejected') assert.ok(s.reason instanceof InsufficientCreditsError, s.reason);
  return settled.filter((s) => s.status === 'fulfilled').length;
}

describe('CreditCheck (D17 holds)', () => {
  const db = useTestStore();

  it('refuses an account at zero and lets it start the moment it is topped up', async () => {
    const account = await createAccount(db.store.collections, { name: 'broke', creditsUsd: 0 });
    const check = new CreditCheck(db.store.collections);
    const refused = await check.reserve(account._id, 'run_a', 0.001).catch((err) => err);
    assert.ok(refused instanceof InsufficientCreditsError);
    assert.match(refused.message, /no credit left \(balance \$0\.00\)/);
    await addCredits(db.store.collections, account._id, 1);
    await check.reserve(account._id, 'run_b', 0.001);
  });

  it('admits, across two processes racing 80 starts, exactly what $0.005 covers at $0.001 a hold', async () => {
    const account = await createAccount(db.store.collections, { name: 'race', creditsUsd: 0.005 });
    const [a, b] = [new CreditCheck(db.store.collections), new CreditCheck(db.store.collections)];
    const admitted = await outcomes(
      Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).reserve(account._id, `run_${i}`, 0.001)),
    );
    assert.equal(admitted, 5);
    assert.deepEqual(await accountCredit(db.store.collections, account._id), {
      balance_usd: 0.005,
      held_usd: 0.005,
      available_usd: 0,
    });
    // A refusal explains itself: what is held, and until when.
    const refused = await a.reserve(account._id, 'run_late', 0.001).catch((err) => err);
    assert.ok(refused instanceof InsufficientCreditsError);
    assert.match(refused.message, /\$0\.005 of it is held by runs in progress/);
  });

  it('lets only the last admitted hold pass zero: a hold larger than what is left still starts, then nothing', async () => {
    const account = await createAccount(db.store.collections, { name: 'over', creditsUsd: 0.005 });
    const check = new CreditCheck(db.store.collections);
    const starts = Array.from({ length: 10 }, (_, i) =>
      check.reserve(account._id, `run_${i}`, 0.003),
    );
    assert.equal(await outcomes(starts), 2);
    const credit = await accountCredit(db.store.collections, account._id);
    assert.equal(credit.available_usd, -0.001); // below zero by less than one hold
    // Those refused beside the admitted ones are told what the admitted hold, not what was held
    // before them ("$0.003 of it is held" beside a balance of $0.005 contradicted the refusal).
    for (const s of await Promise.allSettled(starts))
      if (s.status === 'rejected')
        assert.match(
          (s.reason as Error).message,
          /its balance is \$0\.005, and \$0\.006 of it is held by runs in progress/,
        );
  });

  it('sees a release at once when refusing: the freed credit admits the next start', async () => {
    const account = await createAccount(db.store.collections, { name: 'cycle', creditsUsd: 0.002 });
    const check = new CreditCheck(db.store.collections);
    await check.reserve(account._id, 'run_1', 0.002);
    await assert.rejects(check.reserve(account._id, 'run_2', 0.002), InsufficientCreditsError);
    // The run ends: its debit gives the hold back (store/run-end.ts); it cost half its hold.
    await postEntry(db.store.collections, {
      _id: 'led_cycle_1',
      account_id: account._id,
      kind: 'run',
      run_id: 'run_1',
      amount_usd: -0.001,
      note: null,
      released_usd: 0.002,
    });
    await check.reserve(account._id, 'run_3', 0.002);
    await assert.rejects(check.reserve(account._id, 'run_4', 0.002), InsufficientCreditsError);
    // A start that never ran gives its hold back with a release entry.
    await check.release(account._id, 'run_3', 0.002, 'test');
    assert.deepEqual(await accountCredit(db.store.collections, account._id), {
      balance_usd: 0.001,
      held_usd: 0,
      available_usd: 0.001,
    });
  });

  it('a rich account: concurrent starts share one chain insert, the next ones use the lease with no store write, and close() gives the rest back', async () => {
    const account = await createAccount(db.store.collections, { name: 'rich', creditsUsd: 100 });
    const { collection: creditHolds, probe } = countingCalls(
      db.store.collections.creditHolds,
      'insertOne',
    );
    const check = new CreditCheck({ ...db.store.collections, creditHolds });
    await Promise.all(
      Array.from({ length: 32 }, (_, i) => check.reserve(account._id, `r${i}`, 0.01)),
    );
    assert.equal(
      probe.calls,
      1,
      'the first start took a lease that covered the 31 waiting behind it',
    );
    for (let i = 0; i < LEASE_HOLDS; i++) await check.reserve(account._id, `l${i}`, 0.01);
    assert.equal(probe.calls, 2, 'one more lease for 64 more starts');
    await check.close();
    // Held now: exactly the 32 + 64 admitted holds; the lease's unused rest went back.
    const credit = await accountCredit(db.store.collections, account._id);
    assert.equal(credit.held_usd, 0.96);
    assert.equal(credit.available_usd, 99.04);
  });

  it("sees an operator's correction at its next commit: credit taken away is never spent from a remembered sum", async () => {
    const c = db.store.collections;
    const account = await createAccount(c, { name: 'corrected', creditsUsd: 10 });
    const check = new CreditCheck(c, 60_000); // a sum this process would not refresh by age
    await check.reserve(account._id, 'run_1', 0.001); // remembers $10: rich, no refresh needed
    await addCredits(c, account._id, -10, 'chargeback'); // available now −$0.001
    // Larger than what is left of the lease: decided by a commit. Before, one process admitted
    // every start after a correction (100 of 100, the balance −$0.101).
    const refused = await check.reserve(account._id, 'run_2', 1).catch((err) => err);
    assert.ok(refused instanceof InsufficientCreditsError, String(refused));
    await check.close();
    assert.equal((await accountCredit(c, account._id)).available_usd, -0.001);
  });

  it('a stale sum in one process never over-admits: the chain carries what another process reserved', async () => {
    const account = await createAccount(db.store.collections, { name: 'stale', creditsUsd: 0.003 });
    const a = new CreditCheck(db.store.collections, 60_000);
    const b = new CreditCheck(db.store.collections, 60_000);
    await a.reserve(account._id, 'run_a1', 0.001); // a remembers the sum: 0.003
    await b.reserve(account._id, 'run_b1', 0.001);
    await b.reserve(account._id, 'run_b2', 0.001);
    await assert.rejects(a.reserve(account._id, 'run_a2', 0.001), InsufficientCreditsError);
    assert.equal((await findChainHead(db.store.collections, account._id)).reserved_usd, 0.003);
  });

  it('finds the chain head by galloping over ids from any known entry', async () => {
    // Too little for a lease (store/credit-holds.ts): every start is its own entry.
    const account = await createAccount(db.store.collections, {
      name: 'long chain',
      creditsUsd: 0.15,
    });
    const check = new CreditCheck(db.store.collections);
    for (let i = 0; i < 13; i++) await check.reserve(account._id, `run_${i}`, 0.01);
    const head = await findChainHead(db.store.collections, account._id);
    assert.deepEqual({ n: head.n, reserved_usd: head.reserved_usd }, { n: 13, reserved_usd: 0.13 });
    assert.ok(head.created_at instanceof Date, 'the entry as stored, with its time');
    assert.deepEqual(
      await findChainHead(db.store.collections, account._id, { n: 5, reserved_usd: 0.05 }),
      head,
    );
  });

  it('sums the ledger once for many concurrent starts of one account', async () => {
    const account = await createAccount(db.store.collections, { name: 'busy', creditsUsd: 1 });
    const { collection: ledger, probe } = countingCalls(db.store.collections.ledger, 'aggregate');
    const check = new CreditCheck({ ...db.store.collections, ledger });
    await Promise.all(
      Array.from({ length: 32 }, (_, i) => check.reserve(account._id, `r${i}`, 0.001)),
    );
    // One sum (two aggregates: balance and released), and the one of the account's first checkpoint (written once, off the path).
    assert.equal(probe.calls, 4);
    await waitFor(async () => (check.checkpointing === 0 ? true : undefined), {
      what: 'the checkpoint write',
    });
    await check.close();
  });

  it('sums only the entries after the newest checkpoint, releases included, and writes the next one off the start path', async () => {
    const account = await createAccount(db.store.collections, {
      name: 'long ledger',
      creditsUsd: 0,
    });
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
    await db.store.collections.ledger.insertMany(entries);
    await db.store.collections.ledger.insertOne({
      _id: `led_oldrel_${account._id}`,
      account_id: account._id,
      kind: 'release',
      run_id: null,
      amount_usd: 0,
      note: null,
      released_usd: 0.25,
      created_at: old,
    });
    await postEntry(db.store.collections, {
      _id: `led_new_${account._id}`,
      account_id: account._id,
      kind: 'run',
      run_id: null,
      amount_usd: -0.5,
      note: null,
      released_usd: 0.5,
    });
    const check = new CreditCheck(db.store.collections, 0);
    await check.reserve(account._id, 'run_1', 0); // 5 - 0.5 > 0; the account has no checkpoint yet: one is written
    await waitFor(async () => (check.checkpointing === 0 ? true : undefined), {
      what: 'the checkpoint write',
    });
    const chk = await latestCheckpoint(db.store.collections, account._id);
    assert.equal(chk?.n, 1);
    assert.equal(chk?.total_usd, 5); // the old entries, not the recent debit (newer than the checkpoint's lag)
    assert.equal(chk?.released_usd, 0.25);
    // Now a sum covers the debit alone, and still says the same.
    assert.deepEqual(await sumsFrom(db.store.collections, account._id, chk), {
      balance: 4.5,
      released: 0.75,
    });
    assert.equal(await balanceFrom(db.store.collections, account._id, chk), 4.5);
    assert.equal(await accountBalance(db.store.collections, account._id), 4.5);
    // Another process writing checkpoint 1 again loses the id and adopts the winner's.
    assert.equal((await writeCheckpoint(db.store.collections, account._id, null))?.n, 1);
    assert.equal(
      await db.store.collections.ledgerCheckpoints.countDocuments({ account_id: account._id }),
      1,
    );
    // Spending it all is seen through the checkpoint (by another process, which reads the newest one).
    await postEntry(db.store.collections, {
      _id: `led_all_${account._id}`,
      account_id: account._id,
      kind: 'run',
      run_id: null,
      amount_usd: -5.25, // what is left, and the 0.75 released above without holds of this test
      note: null,
    });
    await assert.rejects(
      new CreditCheck(db.store.collections).reserve(account._id, 'run_2', 0.001),
      InsufficientCreditsError,
    );
    // A release entry is booked once, however often it is posted.
    const release = {
      id: `led_rel_${account._id}`,
      accountId: account._id,
      runId: null,
      usd: 1,
      note: 'x',
    };
    assert.equal(await postRelease(db.store.collections, release), true);
    assert.equal(await postRelease(db.store.collections, release), false);
  });
  it('books a release the store could not take at once when it answers again, and stops trying when the process stops', async () => {
    const c = db.store.collections;
    const account = await createAccount(c, { name: 'blip', creditsUsd: 1 });
    const { collection: ledger, probe } = countingCalls(c.ledger, 'insertOne');
    const retried: string[] = [];
    let firstRetry!: () => void;
    const retrying = new Promise<void>((resolve) => (firstRetry = resolve));
    const check = new CreditCheck({ ...c, ledger }, undefined, (err, release) => {
      retried.push(`${release.runId ?? 'lease'}: ${(err as Error).message}`);
      firstRetry();
    });
    await check.reserve(account._id, 'run_1', 0.001); // a rich account: a lease for the next starts
    const leased = (await accountCredit(c, account._id)).held_usd - 0.001;
    assert.ok(leased > 0, 'a lease was taken');

    // The store goes away: a start the lease cannot cover ends it, and its rest cannot be booked;
    // a start that will not run cannot give its hold back either.
    probe.fail = new MongoNetworkError('connection refused (injected)');
    await check.reserve(account._id, 'run_2', 0.5);
    await assert.rejects(check.release(account._id, 'run_2', 0.5, 'test'), MongoNetworkError);
    await retrying;
    assert.equal((await accountCredit(c, account._id)).held_usd, roundUsd(0.501 + leased));

    // It answers again: both are booked from the background, once each.
    probe.fail = null;
    await waitFor(async () => (check.checkpointing === 0 ? true : undefined), {
      what: 'the releases tried again',
    });
    assert.equal((await accountCredit(c, account._id)).held_usd, 0.001);
    assert.deepEqual(retried.sort(), [
      'lease: connection refused (injected)',
      'run_2: connection refused (injected)',
    ]);
    const releases = await c.ledger.find({ account_id: account._id, kind: 'release' }).toArray();
    assert.equal(releases.length, 2);

    // A process that stops tries its lease's release once: the store down, it stays held.
    await check.reserve(account._id, 'run_3', 0.001);
    probe.fail = new MongoNetworkError('connection refused (injected)');
    await check.close();
    assert.equal(check.checkpointing, 0);
    assert.ok((await accountCredit(c, account._id)).held_usd > 0.002, 'the lease stays held');
  });
});
