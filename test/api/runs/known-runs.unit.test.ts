/** The live runs a process remembers (api/runs/known-runs.ts): owner and fixed fields, kept live by looks. */
import assert from 'node:assert/strict';
import { KnownRuns } from '../../../api/runs/known-runs';
import type { RunDoc } from '../../../store/documents';

function record(id: string, finalized = false): RunDoc {
  return {
    _id: id,
    account_id: 'acct_a',
    published_workflow_id: 'wf_1',
    published_workflow_version_id: 'wfv_1',
    version: 1,
    created_at: new Date('2026-11-26T00:00:00Z'),
    webhook: null,
    metadata: {},
    finalized,
  } as unknown as RunDoc;
}

describe('KnownRuns', () => {
  let clock = 0;
  const now = () => clock;
  beforeEach(() => (clock = 1_000_000));

  it('answers a run looked at within the quiet window, and each look keeps it live', () => {
    const runs = new KnownRuns(10, 5_000, now);
    runs.remember(record('run_1'));
    for (let i = 0; i < 5; i++) {
      clock += 4_000; // a client polling every 4 s: 20 s in all
      assert.equal(runs.get('run_1')?.account_id, 'acct_a');
    }
  });

  it('leaves a run alone longer than the window to its record (most likely ended meanwhile)', () => {
    const runs = new KnownRuns(10, 5_000, now);
    runs.remember(record('run_1'));
    clock += 5_001;
    assert.equal(runs.get('run_1'), undefined);
    // Read from the store and still live: remembered again, live again.
    runs.remember(record('run_1'));
    assert.equal(runs.get('run_1')?._id, 'run_1');
  });

  it('never remembers a finalized record, forgets an ended run, and holds at most its bound', () => {
    const runs = new KnownRuns(2, 5_000, now);
    runs.remember(record('run_done', true));
    assert.equal(runs.get('run_done'), undefined);
    runs.remember(record('run_1'));
    runs.forget('run_1');
    assert.equal(runs.get('run_1'), undefined);
    for (const id of ['run_2', 'run_3', 'run_4']) runs.remember(record(id));
    assert.equal(runs.size, 2);
    assert.equal(runs.get('run_2'), undefined, 'the oldest seen went first');
    assert.equal(runs.get('run_4')?._id, 'run_4');
  });
});
