/** api/runs/settle-run.ts oneSettleAtATime: readers of a run being settled join its settle. */
import assert from 'node:assert/strict';
import { oneSettleAtATime } from '../../../api/runs/settle-run';

/** A settle that ends when the test says so, counting how often it was started per run. */
function controlledSettle() {
  const started: string[] = [];
  const ends: Array<{ runId: string; end: (err?: Error) => void }> = [];
  const settle = (runId: string) => {
    started.push(runId);
    return new Promise<void>((resolve, reject) =>
      ends.push({ runId, end: (err) => (err ? reject(err) : resolve()) }),
    );
  };
  return { started, ends, settle };
}

describe('settling a closed run once at a time (api/runs/settle-run.ts)', () => {
  it('gives readers of a run being settled the settle under way, and other runs their own', async () => {
    const { started, ends, settle } = controlledSettle();
    const once = oneSettleAtATime(settle);
    const readers = [once('run_a', 5), once('run_a', 5), once('run_b', 5), once('run_a', 5)];
    assert.deepEqual(started, ['run_a', 'run_b']);
    for (const { end } of ends) end();
    await Promise.all(readers);
    // Over: the next reader of a run that is still unsettled (its settle found nothing) settles anew.
    void once('run_a', 5);
    assert.deepEqual(started, ['run_a', 'run_b', 'run_a']);
    ends[2].end();
  });

  it('hands a failed settle to every reader that joined it, and lets the next one try again', async () => {
    const { started, ends, settle } = controlledSettle();
    const once = oneSettleAtATime(settle);
    const readers = [once('run_a', 5), once('run_a', 5)];
    ends[0].end(new Error('the store did not answer'));
    for (const reader of readers) await assert.rejects(reader, /the store did not answer/);
    const again = once('run_a', 5);
    assert.equal(started.length, 2);
    ends[1].end();
    await again;
  });
});
