/** D36 max_cost inside the workflow (workflows/cost-cap.ts): budgets, shrinking and the stop (the bill's cap is RunState's). */
import assert from 'node:assert/strict';
import { CostCap, CostLimitReached } from '../../workflows/cost-cap';
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
