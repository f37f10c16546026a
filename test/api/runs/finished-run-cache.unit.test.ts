/** The per-process cache of finished runs (tools/bench/FINDINGS.md P5): LRU within a byte bound, per account, expiring. */
import assert from 'node:assert/strict';
import { FinishedRunCache } from '../../../api/runs/finished-run-cache';
import type { RunView } from '../../../domain/run-view';

function view(id: string, items = 1): RunView {
  const item = { type: 'text', text: 'x' } as any;
  return {
    id,
    status: 'completed',
    published_workflow_id: 'wf_1',
    published_workflow_version_id: 'wfv_1',
    output: { result: Array.from({ length: items }, () => item) },
    error: null,
    total_cost: 0.001,
    created_at: '2026-11-22T00:00:00.000Z',
    completed_at: '2026-11-22T00:00:01.000Z',
    webhook: null,
    metadata: {},
    parent_run_id: null,
    usage: { provider_calls: 0, input_tokens: 0, output_tokens: 0, by_node: {} },
  };
}

describe('FinishedRunCache', () => {
  it("answers the owner's reads and never another account's", () => {
    const cache = new FinishedRunCache();
    cache.set('acct_a', view('run_1'));
    assert.equal(cache.get('acct_a', 'run_1')?.id, 'run_1');
    assert.equal(cache.get('acct_b', 'run_1'), undefined);
    assert.equal(cache.get('acct_a', 'run_2'), undefined);
  });

  it('keeps nothing with a time to live of 0 (FINISHED_RUN_CACHE_MS=0)', () => {
    const cache = new FinishedRunCache({ ttlMs: 0 });
    cache.set('acct_a', view('run_1'));
    assert.equal(cache.get('acct_a', 'run_1'), undefined);
    assert.equal(cache.size, 0);
  });

  it('forgets entries after their time to live', () => {
    let now = 5_000;
    const cache = new FinishedRunCache({ ttlMs: 1_000, now: () => now });
    cache.set('acct_a', view('run_1'));
    now += 1_000;
    assert.ok(cache.get('acct_a', 'run_1'));
    now += 1;
    assert.equal(cache.get('acct_a', 'run_1'), undefined);
    assert.equal(cache.size, 0);
  });

  it('evicts the least recently used runs to stay within its bytes, and skips a run larger than itself', () => {
    const weight = JSON.stringify(view('run_1', 3)).length;
    const cache = new FinishedRunCache({ maxBytes: 2 * weight + weight / 2 });
    cache.set('a', view('run_1', 3));
    cache.set('a', view('run_2', 3));
    assert.equal(cache.heldBytes, 2 * weight);
    assert.ok(cache.get('a', 'run_1')); // run_1 is now the most recent
    cache.set('a', view('run_3', 3)); // three do not fit: run_2 goes
    assert.equal(cache.get('a', 'run_2'), undefined);
    assert.ok(cache.get('a', 'run_1'));
    assert.ok(cache.get('a', 'run_3'));
    cache.set('a', view('run_big', 100)); // larger than the whole cache: not kept, nothing evicted for it
    assert.equal(cache.get('a', 'run_big'), undefined);
    assert.equal(cache.size, 2);
    assert.equal(cache.heldBytes, 2 * weight);
  });
});
