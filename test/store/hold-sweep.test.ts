/**
 * D17's sweep of held credit on the real store: an API process that died between reserving a
 * run's hold and recording the run, and with a lease, left credit held for no run; once the account
 * has been quiet, the sweep gives back exactly that, once, and never what unfinished runs hold.
 */
import assert from 'node:assert/strict';
import { CreditCheck } from '../../api/limits/credit-check';
import type { RunFinal } from '../../domain/run';
import { accountCredit } from '../../store/credit-holds';
import { HOLD_SWEEP_GRACE_MS, sweepHolds } from '../../store/hold-sweep';
import { generateId } from '../../store/ids';
import { recordRunEnd } from '../../store/run-end';
import { insertRun } from '../../store/runs';
import { newAccount } from '../support/accounts';
import { pendingRun, useTestStore } from '../support/store';

/** A sweep's clock far enough on that everything written so far is past the grace. */
const later = () => Date.now() + HOLD_SWEEP_GRACE_MS + 1_000;

describe('the sweep of credit held for no run (D17)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  /** An account whose process reserved three runs and died: one recorded and working, one ended, one never recorded; and its lease. */
  async function crashedStarts() {
    const c = db.store.collections;
    const { accountId, keyId } = await newAccount(c, 10);
    const process = new CreditCheck(c); // never closed: it died with its lease
    const [working, ended, lost] = [generateId('run'), generateId('run'), generateId('run')];
    await Promise.all([
      process.reserve(accountId, working, 0.5),
      process.reserve(accountId, ended, 0.1),
      process.reserve(accountId, lost, 0.25),
    ]);
    for (const [runId, hold] of [
      [working, 0.5],
      [ended, 0.1],
    ] as const)
      await insertRun(
        c,
        pendingRun({ _id: runId, account_id: accountId, key_id: keyId, hold_usd: hold }),
      );
    const final: RunFinal = {
      runId: ended,
      accountId,
      status: 'completed',
      output: {},
      error: null,
      totalCost: 0.05,
      completedAtMs: Date.now(),
      events: [],
      holdUsd: 0.1,
    };
    await recordRunEnd(c, final);
    return { accountId };
  }

  it('gives back what no unfinished run holds, once the account is quiet, and only once', async () => {
    const c = db.store.collections;
    const { accountId } = await crashedStarts();
    const before = await accountCredit(c, accountId);
    assert.equal(before.balance_usd, 9.95);
    // The working run's 0.5, the lost start's 0.25, and the dead process's lease.
    assert.ok(before.held_usd > 0.75, JSON.stringify(before));

    // Not yet: the account's last reservation and run end are within the grace.
    assert.deepEqual(await sweepHolds(c), { accounts: 0, releases: 0, releasedUsd: 0 });
    assert.deepEqual(await accountCredit(c, accountId), before);

    const swept = await sweepHolds(c, { now: later() });
    assert.equal(swept.releases, 1);
    assert.equal(swept.releasedUsd, Math.round((before.held_usd - 0.5) * 1e9) / 1e9);
    assert.deepEqual(await accountCredit(c, accountId), {
      balance_usd: 9.95,
      held_usd: 0.5,
      available_usd: 9.45,
    });
    const release = await c.ledger.findOne({ account_id: accountId, _id: /^led_sweep_/ });
    assert.equal(release?.kind, 'release');
    assert.equal(release?.amount_usd, 0);

    // A second sweep, or a retried one, books nothing more.
    const again = await sweepHolds(c, { now: later() });
    assert.equal(again.releases, 0);
    assert.equal((await accountCredit(c, accountId)).held_usd, 0.5);
  });

  it('leaves an account alone while a run of it has just ended (its debit may follow its record)', async () => {
    const c = db.store.collections;
    const { accountId } = await crashedStarts();
    const before = await accountCredit(c, accountId);
    // The chain is old, but a run ended within the grace.
    await c.creditHolds.updateMany(
      { account_id: accountId },
      { $set: { created_at: new Date(Date.now() - HOLD_SWEEP_GRACE_MS - 60_000) } },
    );
    const swept = await sweepHolds(c);
    assert.equal(swept.releases, 0);
    assert.deepEqual(await accountCredit(c, accountId), before);
  });
});
