/** The run's event log kept compact (workflows/run-state.ts, D35): item events as numbers, made into events when read or stored. */
import assert from 'node:assert/strict';
import { RunState } from '../../workflows/run-state';
import type { RunArgs } from '../../workflows/definitions';
import { logOfChunks, splitFinal } from '../../domain/run-chunks';
import { RunLog } from '../../domain/run-log';
import { SNAPSHOT_TOKEN_CHARS } from '../../domain/run';

const args = {
  runId: 'run_1',
  accountId: 'acct_1',
  publishedWorkflowId: 'wf_1',
  versionId: 'wfv_1',
  version: 1,
  createdAtMs: 0,
  graph: {
    slug: 'x',
    nodes: [
      { id: 'ask', type: 'llm', model: 'm', prompt: 'x' },
      { id: 'out', type: 'user_result', label: 'Out' },
    ],
    edges: [{ from: 'ask', to: 'out' }],
  },
  inputs: {},
  options: { startFeeUsd: 0 },
} as unknown as RunArgs;

/** A finished run of `rows` stored rows, started and done a block of `block` at a time. */
function storedRun(rows: number, block: number): RunState {
  const state = new RunState(args, { now: () => 0, random: () => 0.5 });
  state.reserveStored('ask', rows);
  for (let first = 0; first < rows; first += block) {
    const n = Math.min(block, rows - first);
    state.storedStarted('ask', first, n);
    state.storedDone('ask', [[first, first + n]]);
  }
  state.finish('completed');
  return state;
}

describe('run state: a compact event log (D35)', () => {
  it('reads the same events as before: numbered, typed, ids from the base', () => {
    const state = storedRun(3, 2);
    const events = state.snapshot(-1).events;
    assert.deepEqual(
      events.map((e) => [e.sequence_number, e.type, 'output_index' in e ? e.output_index : null]),
      [
        [0, 'response.created', null],
        [1, 'response.output_item.added', 0],
        [2, 'response.output_item.added', 1],
        [3, 'response.output_item.done', 0],
        [4, 'response.output_item.done', 1],
        [5, 'response.output_item.added', 2],
        [6, 'response.output_item.done', 2],
        [7, 'response.completed', null],
      ],
    );
    const first = events[1] as { item: { id: string } };
    assert.equal(first.item.id, state.itemIdBase);
    assert.deepEqual(Object.keys(events[1]), ['type', 'sequence_number', 'output_index', 'item']);
  });

  it('stores a 1,000,000-row log in a few KB and reads it back exactly, still a few KB', () => {
    const state = storedRun(1_000_000, 1_000);
    const final = state.final();
    assert.equal(final.events.length, 2, 'only the first and last events as objects');
    assert.equal(final.itemCodes?.length, 2_000_000);
    const { final: head, chunks } = splitFinal(final);
    assert.equal(head.itemCodes, undefined, 'the numbers never reach the record');
    const stored = JSON.stringify(chunks).length;
    assert.ok(stored < 100_000, `${stored} bytes of chunks`);
    const log = logOfChunks({ events: head.events, item_id_base: head.itemIdBase }, chunks);
    assert.equal(log.length, 2_000_002);
    assert.ok(log.segmentCount <= 2_002, `${log.segmentCount} segments: one a block and type`);
    const sample = [0, 1, 1_000, 1_999, 2_000, 1_999_999, 2_000_001];
    for (const i of sample)
      assert.deepEqual(log.at(i), state.snapshot(i - 1).events[0], `event ${i}`);
  });

  it('answers a 1,000,000-row log compact in one answer, read back exactly', () => {
    const state = storedRun(1_000_000, 1_000);
    const answer = state.snapshot(-1, { compact: true });
    assert.deepEqual(answer.events, [], 'the events are in `compact` only');
    assert.equal(answer.compact?.from, 0);
    assert.equal(
      answer.compact?.pieces.length,
      3,
      'created, the item events as one text, completed',
    );
    const bytes = JSON.stringify(answer).length;
    assert.ok(bytes < 50_000, `${bytes} bytes`);
    const log = new RunLog();
    assert.equal(log.appendAnswer(answer), answer.eventCount);
    assert.ok(log.segmentCount <= 2_002, `${log.segmentCount} segments`);
    for (const i of [0, 1, 1_000, 1_999, 2_000, 1_234_567, 1_999_999, 2_000_001])
      assert.deepEqual(log.at(i), state.snapshot(i - 1).events[0], `event ${i}`);
  });

  it('pages a compact log that does not run in blocks by the characters of its tokens', () => {
    // One row at a time: every item's `added` is followed by its `done`, so no two codes make one token.
    const state = storedRun(100_000, 1);
    const { eventCount } = state.snapshot(Number.MAX_SAFE_INTEGER);
    const log = new RunLog();
    let answers = 0;
    while (log.length < eventCount) {
      const answer = state.snapshot(log.length - 1, { compact: true });
      const tokens = answer.compact!.pieces.filter((piece) => typeof piece === 'string').join('');
      assert.ok(tokens.length <= SNAPSHOT_TOKEN_CHARS + 16, `${tokens.length} characters`);
      assert.ok(log.appendAnswer(answer) > 0, 'every answer continues the log');
      answers++;
    }
    assert.ok(answers >= 2 && answers <= 3, `${answers} answers`);
    assert.deepEqual(log.toArray(), state.events);
  });

  it('a small compact log is stored whole', () => {
    const state = storedRun(1_500, 100); // 3,000 item events: compact in the state, whole in the record
    const { final, chunks } = splitFinal(state.final());
    assert.equal(chunks.length, 0);
    assert.deepEqual(final.events, state.events);
  });
});

describe('run state: a live output page (D31)', () => {
  it('says once the run has ended, so rows that did not finish are read as never to finish', () => {
    const state = new RunState(args, { now: () => 0, random: () => 0.5 });
    state.reserveStored('ask', 3);
    state.storedStarted('ask', 0, 3);
    state.storedDone('ask', [[0, 1]]);
    const live = state.outputPage('out', null, 10);
    assert.ok(live?.stored, 'a stored output is read from the store');
    assert.equal(live.ended, undefined);
    state.finish('cancelled');
    assert.equal(state.outputPage('out', null, 10)?.ended, true);
    assert.equal(state.outputPage('nope', null, 10), null);
  });
});
