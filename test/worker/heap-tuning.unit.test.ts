// WORKER_HEAP_GROWING_PERCENT: the worker's V8 heap growing factor (worker/runtime.ts tuneWorkerHeap),
// 30 unless set; 0 leaves V8's own heuristic; a value V8 cannot take is refused at start.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
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

  it('keeps a heap of promoted garbage near its live set once set', function () {
    this.timeout(60_000);
    // ~60 MB live, and short-lived 2 KB strings that live long enough to reach the old space.
    const script = `
      const { tuneWorkerHeap } = require(${JSON.stringify(require.resolve('../../worker/runtime'))});
      if (process.argv[1] === 'tuned') tuneWorkerHeap(30);
      const live = []; for (let i = 0; i < 30000; i++) live.push(String(i).padStart(2000, 'x'));
      const ring = new Array(20000); let peak = 0;
      for (let i = 0; i < 1500000; i++) {
        ring[i % ring.length] = String(i).padStart(2000, 'y');
        if (i % 1000 === 0) peak = Math.max(peak, process.memoryUsage().heapTotal);
      }
      console.log(Math.round(peak / 2 ** 20));`;
    const peakMb = (mode: string) =>
      Number(
        execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script, mode], {
          encoding: 'utf8',
        }).trim(),
      );
    const [v8Own, tuned] = [peakMb('default'), peakMb('tuned')];
    assert.ok(tuned < v8Own * 0.8, `peak heap ${tuned} MB tuned vs ${v8Own} MB left to V8`);
  });
});
