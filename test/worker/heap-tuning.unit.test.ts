// WORKER_HEAP_GROWING_PERCENT: the worker's V8 heap growing factor (worker/runtime.ts tuneWorkerHeap),
// 30 unless set; 0 leaves V8's own heuristic; a value V8 cannot take is refused at start. What it does to
// memory is measured by the bench (P4b's worker RSS), not here: the effect depends on the Node release.
import assert from 'node:assert/strict';
import { loadConfig } from '../../config';

describe('worker: heap growing factor', () => {
  it('is 30 percent by default, 0 leaves it to V8, and a negative value is refused', () => {
    assert.equal(loadConfig({}).worker.heapGrowingPercent, 30);
    assert.equal(loadConfig({ WORKER_HEAP_GROWING_PERCENT: '0' }).worker.heapGrowingPercent, 0);
    assert.throws(
      () => loadConfig({ WORKER_HEAP_GROWING_PERCENT: '-5' }),
      /WORKER_HEAP_GROWING_PERCENT/,
    );
  });
});
