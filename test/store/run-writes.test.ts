/**
 * The group commit of run writes (store/run-writes.ts) against FerretDB: concurrent writes share
 * commands, each is stored before its caller hears so, and a duplicate `_id` (a run id taken, a
 * debit booked already) fails that write alone, as the single write it replaces would.
 */
import assert from 'node:assert/strict';
import type { RunFinal } from '../../domain/run';
import { deriveId, generateId } from '../../store/ids';
import { claimIdempotencyKey, IDEMPOTENCY_TTL_MS } from '../../store/idempotency';
import { isDuplicateKey } from '../../store/ledger';
import { findRunRecord, insertRun } from '../../store/runs';
import { RunWrites } from '../../store/run-writes';
import { pendingRun, useTestStore } from '../support/store';

describe('RunWrites: group commit of run records and debits (FerretDB)', function () {
  this.timeout(60_000);
  const db = useTestStore();

  const newRun = () =>
    pendingRun({ _id: generateId('run'), account_id: 'acct_gc', key_id: 'key_gc' });

  it('stores concurrent starts in fewer commands, each before its caller is answered', async () => {
    const c = db.store.collections;
    const writes = new RunWrites(c);
    const runs = Array.from({ length: 40 }, newRun);
    await Promise.all(
      runs.map(async (run) => {
        await writes.insertRun(run);
        // Answered: the record is there for any reader now.
        assert.ok(await c.runs.findOne({ _id: run._id }), `${run._id} stored when answered`);
      }),
    );
    const { batches, items } = writes.stats.runInserts;
    assert.equal(items, 40);
    assert.ok(batches < items, `${batches} commands for ${items} inserts`);
  });

  it('fails only the start whose run id is taken (in the store already, or twice in one batch)', async () => {
    const c = db.store.collections;
    const writes = new RunWrites(c);
    const existing = newRun();
    await insertRun(c, existing);
    const twice = newRun();
    const others = Array.from({ length: 5 }, newRun);
    const batch = [existing, twice, { ...twice }, ...others];
    const outcomes = await Promise.allSettled(batch.map((run) => writes.insertRun(run)));
    assert.equal(writes.stats.runInserts.batches, 1, 'written in the same tick: one command');
    assert.equal(outcomes[0].status, 'rejected');
    assert.ok(isDuplicateKey((outcomes[0] as PromiseRejectedResult).reason));
    const forTwice = outcomes.slice(1, 3).map((o) => o.status);
    assert.deepEqual(forTwice.sort(), ['fulfilled', 'rejected'], 'one of the two holders wins');
    for (const o of outcomes.slice(3)) assert.equal(o.status, 'fulfilled');
    for (const run of [twice, ...others])
      assert.ok(await c.runs.findOne({ _id: run._id }), `${run._id} stored`);
  });

  it('books a debit once however many attempts post it together; the others learn it was booked', async () => {
    const c = db.store.collections;
    const writes = new RunWrites(c);
    const runId = generateId('run');
    const entry = {
      _id: deriveId('led', runId),
      account_id: 'acct_gc',
      kind: 'run' as const,
      run_id: runId,
      amount_usd: -0.25,
      note: 'run completed',
    };
    const other = { ...entry, _id: generateId('led'), run_id: null, kind: 'credit' as const };
    const booked = await Promise.all([
      writes.postEntry(entry),
      writes.postEntry({ ...entry }),
      writes.postEntry(other),
      writes.postEntry({ ...entry }),
    ]);
    assert.equal(booked.filter((b, i) => b && i !== 2).length, 1, JSON.stringify(booked));
    assert.equal(booked[2], true);
    assert.equal(await c.ledger.countDocuments({ run_id: runId }), 1);
    const stored = await c.ledger.findOne({ _id: entry._id });
    assert.ok(stored?.created_at instanceof Date, 'stamped when written');
  });

  it('gives an idempotency key to exactly one of many claims sent together (D18)', async () => {
    const c = db.store.collections;
    const writes = new RunWrites(c);
    const now = Date.now();
    const claimOf = (runId: string) => ({
      _id: 'acct_gc:key-1',
      account_id: 'acct_gc',
      key: 'key-1',
      request_hash: 'h',
      run_id: runId,
      created_at: new Date(now),
      expires_at: new Date(now + IDEMPOTENCY_TTL_MS),
    });
    const mine = Array.from({ length: 8 }, () => claimOf(generateId('run')));
    const claims = await Promise.all(
      mine.map((claim) => claimIdempotencyKey(c, claim, (doc) => writes.insertClaim(doc))),
    );
    const winners = mine.filter((claim, i) => claims[i].run_id === claim.run_id);
    assert.equal(winners.length, 1, 'one claimant');
    for (const claim of claims) assert.equal(claim.run_id, winners[0].run_id, 'all see its run');
    assert.equal(writes.stats.claimInserts.batches, 1);
  });

  it('writes the final records of many runs ending together', async () => {
    const c = db.store.collections;
    const writes = new RunWrites(c);
    const runs = Array.from({ length: 12 }, newRun);
    for (const run of runs) await insertRun(c, run);
    const finals: RunFinal[] = runs.map((run, i) => ({
      runId: run._id,
      accountId: run.account_id,
      status: i % 2 ? 'completed' : 'failed',
      output: null,
      error: i % 2 ? null : 'boom',
      totalCost: 0.001 * i,
      completedAtMs: Date.now() + i,
      events: [],
    }));
    await Promise.all(finals.map((final) => writes.finalizeRunRecord(final)));
    assert.ok(writes.stats.runEnds.batches < finals.length);
    for (const final of finals) {
      const record = (await findRunRecord(c, final.runId))!;
      assert.equal(record.finalized, true);
      assert.equal(record.status, final.status);
      assert.equal(record.error, final.error);
      assert.equal(record.completed_at?.getTime(), final.completedAtMs);
    }
  });
});
