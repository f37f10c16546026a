/**
 * D17: a run's end gives back the credit held for it exactly once, in the same ledger entry as
 * its debit, whichever end books it (finalize, a retry, the API's settle, all at once), and a run
 * that cost nothing gives its hold back with an entry of amount 0.
 */
import assert from 'node:assert/strict';
import { CreditCheck } from '../../api/limits/credit-check';
import type { RunFinal } from '../../domain/run';
import { accountCredit } from '../../store/credit-holds';
import { generateId, deriveId } from '../../store/ids';
import { recordRunEnd } from '../../store/run-end';
import { insertRun } from '../../store/runs';
import { newAccount } from '../support/accounts';
import { pendingRun, useTestStore } from '../support/store';

describe('run end: the hold is released once (D17)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  /** An account holding `credit`, a run of it whose hold was reserved as a start does, and its final. */
  async function heldRun(credit: number, holdUsd: number, totalCost: number) {
    const c = db.store.collections;
    const { accountId, keyId } = await newAccount(c, credit);
    const runId = generateId('run');
    const credits = new CreditCheck(c);
    await credits.reserve(accountId, runId, holdUsd);
    await credits.close(); // a lease's unused rest goes back: only the run's hold stays held
    await insertRun(
      c,
      pendingRun({ _id: runId, account_id: accountId, key_id: keyId, hold_usd: holdUsd }),
    );
    const final: RunFinal = {
      runId,
      accountId,
      status: 'completed',
      output: {},
      error: null,
      totalCost,
      completedAtMs: Date.now(),
      events: [],
    };
    return { accountId, final };
  }

  it('finalize, a retry and a settle racing it release the hold once, with the debit', async () => {
    const c = db.store.collections;
    const { accountId, final } = await heldRun(0.005, 0.003, 0.002);
    assert.deepEqual(await accountCredit(c, accountId), {
      balance_usd: 0.005,
      held_usd: 0.003,
      available_usd: 0.002,
    });
    await Promise.all([
      recordRunEnd(c, final),
      recordRunEnd(c, final),
      recordRunEnd(
        c,
        { ...final, status: 'failed', error: 'late', completedAtMs: Date.now() + 1 },
        'settle',
      ),
    ]);
    await recordRunEnd(c, final);
    const entries = await c.ledger.find({ run_id: final.runId }).toArray();
    assert.equal(entries.length, 1, JSON.stringify(entries));
    assert.equal(entries[0]._id, deriveId('led', final.runId));
    assert.equal(entries[0].released_usd, 0.003);
    assert.deepEqual(await accountCredit(c, accountId), {
      balance_usd: 0.003,
      held_usd: 0,
      available_usd: 0.003,
    });
  });

  it('a run that cost nothing books an entry of amount 0 that gives its hold back', async () => {
    const c = db.store.collections;
    const { accountId, final } = await heldRun(1, 0.011, 0);
    await recordRunEnd(c, final);
    await recordRunEnd(c, final);
    const entries = await c.ledger.find({ run_id: final.runId }).toArray();
    assert.deepEqual(
      entries.map((e) => [e.kind, e.amount_usd, e.released_usd]),
      [['run', 0, 0.011]],
    );
    assert.equal((await accountCredit(c, accountId)).held_usd, 0);
  });

  it('a final that carries the hold its run was started with releases it without reading the record', async () => {
    const c = db.store.collections;
    const { accountId, final } = await heldRun(0.005, 0.003, 0.002);
    // The record is read only by findOne: a store whose findOne fails shows the read is gone.
    const runs = new Proxy(c.runs, {
      get: (target, prop, receiver) =>
        prop === 'findOne'
          ? () => Promise.reject(new Error('finalize read the run record'))
          : (Reflect.get(target, prop, receiver) as unknown),
    });
    assert.equal(
      await recordRunEnd({ runs, ledger: c.ledger }, { ...final, holdUsd: 0.003 }),
      true,
    );
    const entries = await c.ledger.find({ run_id: final.runId }).toArray();
    assert.deepEqual(
      entries.map((e) => [e.kind, e.amount_usd, e.released_usd]),
      [['run', -0.002, 0.003]],
    );
    assert.deepEqual(await accountCredit(c, accountId), {
      balance_usd: 0.003,
      held_usd: 0,
      available_usd: 0.003,
    });
    assert.equal((await c.runs.findOne({ _id: final.runId }))?.status, 'completed');
  });

  it('a settle whose debit is not booked leaves the record open, and the next settle books both (before: final and unbilled for good)', async () => {
    const c = db.store.collections;
    const { accountId, final } = await heldRun(0.005, 0.003, 0.002);
    const settled = { ...final, status: 'failed' as const, error: 'terminated' };
    const ledger = new Proxy(c.ledger, {
      get: (target, prop, receiver) =>
        prop === 'insertOne'
          ? () => Promise.reject(new Error('the ledger write failed'))
          : (Reflect.get(target, prop, receiver) as unknown),
    });
    await assert.rejects(recordRunEnd({ runs: c.runs, ledger }, settled, 'settle'), /ledger write/);
    // A read settles a run again only while its record is open: it must be, the run being unbilled.
    assert.equal((await c.runs.findOne({ _id: final.runId }))?.finalized, false);

    assert.equal(await recordRunEnd(c, settled, 'settle'), true);
    const entries = await c.ledger.find({ run_id: final.runId }).toArray();
    assert.deepEqual(
      entries.map((e) => [e.kind, e.amount_usd, e.released_usd]),
      [['run', -0.002, 0.003]],
    );
    assert.equal((await c.runs.findOne({ _id: final.runId }))?.status, 'failed');
    assert.equal((await accountCredit(c, accountId)).balance_usd, 0.003);
  });
});
