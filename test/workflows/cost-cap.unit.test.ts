/** D36 max_cost inside the workflow (workflows/cost-cap.ts): budgets, shrinking and the stop (the bill's cap is RunState's). */
import assert from 'node:assert/strict';
import { CostCap, CostLimitReached, CreditLimitReached } from '../../workflows/cost-cap';
import { callBudgets } from '../../domain/run-hold';
import { WorkflowDocumentSchema } from '../../domain/graph';
import { runView } from '../../domain/run-view';

describe('CostCap (D36)', () => {
  const make = (maxUsd: number, spent = { usd: 0.001 }) => ({
    spent,
    cap: new CostCap({ maxUsd, perCallUsd: { ask: 0.002 } }, () => spent.usd),
  });

  it('shrinks a unit to the calls that fit, and reserves them until released', () => {
    const { cap } = make(0.009); // fee 0.001: room for 4 calls
    const first = cap.take('ask', 3);
    assert.equal(first.calls, 3);
    assert.equal(cap.take('ask', 5).calls, 1); // 3 reserved, 1 left
    assert.throws(() => cap.take('ask', 1), CostLimitReached);
    assert.equal(cap.reached, true);
  });

  it('waits for the units in flight when their budgets fill the cap, and stops only when none is left', async () => {
    const { cap, spent } = make(0.009); // room for 4 calls
    const inFlight = cap.take('ask', 4);
    let next: { calls: number } | undefined;
    const waiting = cap.takeSettled('ask', 4, () => true).then((unit) => (next = unit));
    await Promise.resolve();
    assert.equal(next, undefined, 'no room while the 4 budgets are in flight');
    spent.usd += 0.001 * 4; // they cost half their budget
    inFlight.release();
    await waiting;
    assert.equal(next!.calls, 2, 'the room their cost left');
    assert.equal(cap.reached, false);
    // Nothing in flight and no room: the cap is reached at once.
    (next as unknown as { release: () => void }).release();
    spent.usd += 0.004;
    await assert.rejects(
      cap.takeSettled('ask', 1, () => true),
      CostLimitReached,
    );
    // Runs started before the patch stop where the budgets in flight leave no room.
    const old = make(0.009).cap;
    old.take('ask', 4);
    await assert.rejects(
      old.takeSettled('ask', 1, () => false),
      CostLimitReached,
    );
  });

  it('starts nothing once reached, free work included', () => {
    const { cap } = make(0.001);
    assert.throws(() => cap.take('ask', 1), /cost limit reached.*max_cost of \$0\.001/);
    assert.throws(() => cap.take('free', 10), CostLimitReached);
  });

  it('counts what a released unit cost instead of its budget', () => {
    const { cap, spent } = make(0.009);
    const unit = cap.take('ask', 4);
    spent.usd += 0.001 * 4; // the calls cost half their budget
    unit.release();
    assert.equal(cap.take('ask', 10).calls, 2);
  });

  it('raises a node budget to the dearest call seen', () => {
    const { cap, spent } = make(0.05);
    const unit = cap.take('ask', 2);
    spent.usd += 0.04; // two calls at $0.02, ten times their budget
    cap.observe('ask', 2, 0.04);
    unit.release();
    assert.equal(cap.perCall('ask'), 0.02);
    assert.throws(() => cap.take('ask', 1), CostLimitReached); // 0.009 left < 0.02
  });

  it('lets nodes without a price run uncounted while the cap is not reached', () => {
    const { cap } = make(0.002);
    assert.equal(cap.take('http', 1_000).calls, 1_000);
  });

  it('budgets per call as the hold does: images exactly, token-priced calls at the estimate', () => {
    const graph = WorkflowDocumentSchema.parse({
      slug: 'w',
      nodes: [
        { id: 'img', type: 'image_generation', model: 'img-test', prompt: 'x', n: 2 },
        { id: 'ask', type: 'llm', model: 'gpt-test', prompt: 'x' },
        { id: 'free', type: 'llm', model: 'unpriced', prompt: 'x' },
      ],
      edges: [],
    });
    const price = { input_per_mtok: 1, output_per_mtok: 2, per_image: 0.04, per_second: 0 };
    assert.deepEqual(
      callBudgets(graph, {
        startFeeUsd: 0.001,
        perCallUsd: 0.01,
        prices: { 'img-test': price, 'gpt-test': price },
      }),
      { img: 0.08, ask: 0.01 },
    );
  });
});

describe("CostCap at the hold, grown from the account's credit (D17)", () => {
  /** A run holding the fee and one $0.002 call, whose account has `available` left to hold. */
  const credited = (available: number, bounded = true) => {
    const spent = { usd: 0.001 };
    const asked: number[] = [];
    const account = { available };
    const cap = new CostCap({ maxUsd: 0.003, perCallUsd: { ask: 0.002 } }, () => spent.usd, {
      bounded: () => bounded,
      extend: async (wantUsd) => {
        asked.push(wantUsd);
        const granted = Math.min(wantUsd, account.available);
        account.available -= granted;
        return granted;
      },
    });
    return { cap, spent, asked, account };
  };

  it('takes a unit that fits its hold whole, asking for nothing', async () => {
    const { cap, asked } = credited(1);
    assert.equal((await cap.takeSettled('ask', 1, () => true)).calls, 1);
    assert.deepEqual(asked, []);
    assert.equal((await cap.takeSettled('free', 500, () => true)).calls, 500);
  });

  it('asks for what a unit lacks, or twice its hold, and takes the unit whole', async () => {
    const { cap, asked } = credited(1);
    assert.equal((await cap.takeSettled('ask', 64, () => true)).calls, 64);
    assert.equal(asked.length, 1);
    assert.ok(Math.abs(asked[0] - (64 * 0.002 - 0.002)) < 1e-9, `${asked[0]}`); // the lack, more than the hold
    assert.ok(Math.abs(cap.maxUsd - 0.003 - asked[0]) < 1e-9);
    // The next unit lacks little: the hold doubles.
    await cap.takeSettled('ask', 1, () => true);
    assert.ok(Math.abs(asked[1] - cap.maxUsd / 2) < 1e-9, `${asked[1]} of ${cap.maxUsd}`);
  });

  it('shrinks to what the last credit covers, waits for the units in flight, then stops naming the credit', async () => {
    const { cap, spent, account } = credited(0.004); // room for 1 + 2 calls in all
    const first = await cap.takeSettled('ask', 10, () => true);
    assert.equal(first.calls, 3, 'the hold and all the account had left');
    assert.equal(account.available, 0);
    let next: { calls: number; release: () => void } | undefined;
    const waiting = cap.takeSettled('ask', 10, () => true).then((unit) => (next = unit));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(next, undefined, 'no credit while the 3 budgets are in flight');
    spent.usd += 0.001 * 3; // they cost half their budget
    first.release();
    await waiting;
    assert.equal(next!.calls, 1, 'the room their cost left');
    next!.release();
    spent.usd += 0.002;
    await assert.rejects(
      cap.takeSettled('ask', 1, () => true),
      (err: Error) => {
        assert.ok(err instanceof CreditLimitReached && err instanceof CostLimitReached);
        assert.match(err.message, /^insufficient credits: .*\(\$0\.007 held for it\)/);
        return true;
      },
    );
    assert.equal(cap.reached, true);
  });

  it('asks one request at a time: units that found no room meanwhile take its answer', async () => {
    let inFlight = 0;
    let most = 0;
    const cap = new CostCap({ maxUsd: 0.003, perCallUsd: { ask: 0.002 } }, () => 0.001, {
      bounded: () => true,
      extend: async (wantUsd) => {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        return wantUsd;
      },
    });
    const units = await Promise.all([1, 2, 3].map(() => cap.takeSettled('ask', 8, () => true)));
    assert.deepEqual(
      units.map((u) => u.calls),
      [8, 8, 8],
    );
    assert.equal(most, 1);
  });

  it('leaves runs started before the patch unbounded, as they were', async () => {
    const { cap, asked } = credited(0, false);
    assert.equal((await cap.takeSettled('ask', 1_000, () => true)).calls, 1_000);
    assert.equal((await cap.takeSettled('ask', 1_000, () => true)).calls, 1_000);
    assert.deepEqual(asked, []);
  });
});

describe('usage of runs recorded before D36', () => {
  it('renders as zeros', () => {
    const view = runView({
      _id: 'run_1',
      status: 'completed',
      published_workflow_id: 'wf_1',
      published_workflow_version_id: 'wfv_1',
      output: {},
      error: null,
      total_cost: 0.001,
      created_at: new Date(0),
      completed_at: new Date(1),
    });
    assert.deepEqual(view.usage, {
      provider_calls: 0,
      input_tokens: 0,
      output_tokens: 0,
      by_node: {},
    });
  });
});
