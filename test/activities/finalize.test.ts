/**
 * The finalize activity against a real database (FerretDB): the run record and the run's debit
 * are written exactly once (D17), whatever step an earlier attempt died after, however many
 * attempts run at once, and however many runs of one account end at the same moment.
 */
import assert from 'node:assert/strict';
import { createActivities } from '../../activities';
import { generateId, deriveId } from '../../store/ids';
import { insertRun, finalizeRunRecord } from '../../store/runs';
import { recordRunEnd } from '../../store/run-end';
import { accountBalance } from '../../store/ledger';
import type { RunFinal } from '../../domain/run';
import { newAccount } from '../support/accounts';
import { pendingRun as pendingRunDoc, useTestStore } from '../support/store';
import { findRunRecord } from '../../store/runs';

const CONFIG = { providers: {}, prices: {} };
const CREDITS = 10;

describe('finalize activity: one record and one debit per run (D17)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  /** A fresh account with a pending run of it, and the final its workflow would hand over. */
  async function pendingRun(totalCost = 0.0014): Promise<{ accountId: string; final: RunFinal }> {
    const c = db.store.collections;
    const { accountId, keyId } = await newAccount(c, CREDITS);
    const run = pendingRunDoc({ _id: generateId('run'), account_id: accountId, key_id: keyId });
    await insertRun(c, run);
    const final: RunFinal = {
      runId: run._id,
      accountId,
      status: 'completed',
      output: {
        out: [
          {
            id: generateId('item'),
            item_index: 0,
            status: 'completed',
            parts: [{ type: 'text', text: 'hi' }],
          },
        ],
      },
      error: null,
      totalCost,
      completedAtMs: Date.now(),
      events: [],
    };
    return { accountId, final };
  }

  /** Asserts the run is finalized with `final` and debited exactly once. */
  async function assertSettled(accountId: string, final: RunFinal): Promise<void> {
    const c = db.store.collections;
    const record = (await findRunRecord(c, final.runId))!;
    assert.equal(record.finalized, true);
    assert.equal(record.status, final.status);
    assert.deepEqual(record.output, final.output);
    assert.equal(record.total_cost, final.totalCost);
    assert.equal(record.completed_at?.getTime(), final.completedAtMs);
    const entries = await c.ledger.find({ run_id: final.runId }).toArray();
    assert.equal(entries.length, 1, JSON.stringify(entries));
    assert.equal(entries[0]._id, deriveId('led', final.runId));
    assert.equal(entries[0].kind, 'run');
    assert.equal(entries[0].amount_usd, -final.totalCost);
    const balance = await accountBalance(c, accountId);
    assert.ok(Math.abs(balance - (CREDITS - final.totalCost)) < 1e-9, `balance ${balance}`);
  }

  it('writes the record and one debit; a retry changes nothing, nor does a settle after it', async () => {
    const { accountId, final } = await pendingRun();
    const c = db.store.collections;
    const { finalizeRun } = createActivities({ collections: c, config: CONFIG });
    await finalizeRun(final);
    await assertSettled(accountId, final);
    assert.equal(await recordRunEnd(c, final), false, 'a retried attempt changes nothing');
    const settled = { ...final, status: 'failed' as const, output: null, error: 'x', totalCost: 3 };
    assert.equal(await recordRunEnd(c, settled, 'settle'), false);
    await assertSettled(accountId, final);
  });

  it('keeps the first end booked: a second, different end (a reset workflow, a late finalize) writes nothing', async () => {
    const c = db.store.collections;
    const first = await pendingRun();
    const settled = {
      ...first.final,
      status: 'failed' as const,
      output: null,
      error: 'closed',
      completedAtMs: first.final.completedAtMs + 5,
    };
    await recordRunEnd(c, settled, 'settle');
    assert.equal(await recordRunEnd(c, first.final), false, 'a finalize after a settle');
    await assertSettled(first.accountId, settled);
    const second = await pendingRun();
    await recordRunEnd(c, second.final);
    const rerun = { ...second.final, totalCost: 3, completedAtMs: second.final.completedAtMs + 1 };
    assert.equal(await recordRunEnd(c, rerun), false, 'the end of a reset workflow');
    await assertSettled(second.accountId, second.final);
  });

  it('finishes the job whatever step an earlier attempt died after', async () => {
    const c = db.store.collections;
    const { finalizeRun } = createActivities({ collections: c, config: CONFIG });
    const debit = (final: RunFinal) =>
      c.ledger.insertOne({
        _id: deriveId('led', final.runId),
        account_id: final.accountId,
        kind: 'run',
        run_id: final.runId,
        amount_usd: -final.totalCost,
        note: `run ${final.status}`,
        created_at: new Date(),
        run_ended_at: new Date(final.completedAtMs),
      });
    const crashes: Record<string, (final: RunFinal) => Promise<void>> = {
      'after the debit': async (final) => {
        await debit(final);
      },
      'after the debit and the record': async (final) => {
        await debit(final);
        await finalizeRunRecord(c, final);
      },
    };
    // A local activity's input is not in history: the workflow task after a lost one ends the run
    // again at its own time, and the record must take the time the debit was booked with.
    const retries: Record<string, (final: RunFinal) => RunFinal> = {
      '': (final) => final,
      ', its workflow task lost': (final) => ({
        ...final,
        completedAtMs: final.completedAtMs + 1_000,
      }),
    };
    for (const [died, crash] of Object.entries(crashes))
      for (const [lost, retried] of Object.entries(retries)) {
        const when = died + lost;
        const { accountId, final } = await pendingRun();
        await crash(final);
        await finalizeRun(retried(final));
        await assertSettled(accountId, final).catch((err) =>
          assert.fail(`crash ${when}: ${(err as Error).message}`),
        );
      }
  });

  it('debits once when several attempts run at the same time', async () => {
    const { accountId, final } = await pendingRun();
    const { finalizeRun } = createActivities({ collections: db.store.collections, config: CONFIG });
    await Promise.all(Array.from({ length: 5 }, () => finalizeRun(final)));
    await assertSettled(accountId, final);
  });

  it('lands every debit of many runs of one account finishing at once, each once', async () => {
    const c = db.store.collections;
    const first = await pendingRun(0.001);
    const finals = [first.final];
    for (let i = 1; i < 12; i++) {
      const { final } = await pendingRun(0.001 * (i + 1));
      // Move the run into the first account (pendingRun makes an account per run).
      await c.runs.updateOne({ _id: final.runId }, { $set: { account_id: first.accountId } });
      finals.push({ ...final, accountId: first.accountId });
    }
    const { finalizeRun } = createActivities({ collections: c, config: CONFIG });
    // Every run twice, all at once: duplicate attempts of many runs of one account.
    await Promise.all([...finals, ...finals].map((final) => finalizeRun(final)));
    const sum = finals.reduce((total, f) => total + f.totalCost, 0);
    const balance = await accountBalance(c, first.accountId);
    assert.ok(
      Math.abs(balance - (CREDITS - sum)) < 1e-9,
      `balance ${balance}, expected ${CREDITS - sum}`,
    );
    const entries = await c.ledger.find({ account_id: first.accountId, kind: 'run' }).toArray();
    assert.equal(entries.length, finals.length);
  });
});
