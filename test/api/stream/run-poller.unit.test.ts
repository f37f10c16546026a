/**
 * api/stream/run-poller.ts through its seam, PollSource, with no Temporal: a fake source plays the
 * run (its event log grows as the test says), subscribers record what they get. Checks D15 (one
 * poll per run however many clients), ordering, the end at once for clients that watched the run
 * (the `awaitEnd` update) but a tick later for one that comes back to a finished run (spec rule 3),
 * cleanup when clients leave, and the fallback to the stored record while Temporal is down.
 */
import assert from 'node:assert/strict';
import {
  PollerRegistry,
  type PollSource,
  type RunSeed,
  type Subscriber,
} from '../../../api/stream/run-poller';
import { createdEvent, type RunEvent, type RunSnapshot, type RunStatus } from '../../../domain/run';
import {
  RunLog,
  codeToken,
  itemCodeOf,
  itemEventOf,
  type EventsView,
  type ItemEvent,
} from '../../../domain/run-log';
import { newId } from '../../../domain/ids';
import { waitFor } from '../../support/http';

const RUN = 'run_01J00000000000000000000000';
const POLL_MS = 20;

function itemEvent(
  seq: number,
  type: 'response.output_item.added' | 'response.output_item.done',
  index: number,
): RunEvent {
  return {
    type,
    sequence_number: seq,
    output_index: index,
    item: { type: 'message', id: `item_${index}`, phase: 'final_answer' },
  };
}
const completedEvent = (seq: number): RunEvent => ({
  type: 'response.completed',
  sequence_number: seq,
  response: { usage: null, service_tier: null },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A run whose log the test appends to; `down` makes the live query throw (Temporal unreachable). */
function fakeRun() {
  const run = {
    status: 'running' as RunStatus,
    log: [createdEvent({ runId: RUN, createdAtMs: 0, publishedWorkflowId: 'wf_x' })],
    down: false,
    /** Deleted (D39): Temporal has no workflow for it (no news) and its record is gone. */
    deleted: false,
    stored: null as { status: RunStatus; log: RunLog | null } | null,
    snapshots: 0,
    /** Answers the poller's wait for the end with the log's last `tail` events (the `awaitEnd` update). */
    end: (_tail: number) => {},
  };
  const answer = (events: RunEvent[]) =>
    ({
      status: run.status,
      events,
      eventCount: run.log.length,
      output: null,
    }) as unknown as RunSnapshot;
  const source: PollSource = {
    async snapshot(_runId, after) {
      run.snapshots++;
      if (run.down) throw new Error('Temporal unreachable');
      if (run.deleted) return null;
      return answer(run.log.slice(after + 1));
    },
    awaitEnd: (_runId, signal) =>
      new Promise((resolve) => {
        signal.addEventListener('abort', () => resolve(null));
        run.end = (tail) => resolve(answer(run.log.slice(-tail)));
      }),
    async stored() {
      return run.stored;
    },
  };
  return { run, source };
}

/** A client that starts at `cursor` and records every event it may read, read from the poller's log. */
function client(cursor: number) {
  const state = {
    started: false,
    status: undefined as RunStatus | undefined,
    ended: false,
    dropped: false,
    gone: false,
    got: [] as number[],
  };
  let log: EventsView;
  let read = cursor;
  const sub: Subscriber = {
    start: (known) => {
      state.started = true;
      state.status = known.status;
      log = known.events;
      return cursor;
    },
    advance: (upTo) => {
      while (read < upTo) state.got.push(log.at(++read).sequence_number);
    },
    end: () => (state.ended = true),
    drop: () => (state.dropped = true),
    gone: () => (state.gone = true),
  };
  return { sub, state };
}

const until = (check: () => boolean, what: string) =>
  waitFor(async () => (check() ? true : undefined), { timeoutMs: 3000, intervalMs: 5, what });
const seed: RunSeed = { status: 'pending', events: new RunLog() };

describe('RunPoller (api/stream/run-poller.ts, fake PollSource)', () => {
  it('polls a run once per interval however many clients stream it, and stops when the last leaves (D15)', async () => {
    const { run, source } = fakeRun();
    const registry = new PollerRegistry(source, POLL_MS);
    const a = client(0);
    const b = client(0);
    const offA = registry.subscribe(RUN, seed, a.sub);
    const offB = registry.subscribe(RUN, seed, b.sub);
    assert.equal(registry.size, 1, 'one poller for the run');
    await until(() => a.state.started && b.state.started, 'both started');
    run.log.push(itemEvent(1, 'response.output_item.added', 0));
    await until(() => a.state.got.length > 0 && b.state.got.length > 0, 'both got event 1');
    const poller = registry.get(RUN)!;
    const before = poller.queries;
    await sleep(POLL_MS * 10);
    const perTick = (poller.queries - before) / 10;
    assert.ok(
      perTick <= 1.2,
      `about one query per interval for both clients, not two (${perTick})`,
    );
    offA();
    assert.equal(registry.size, 1);
    offB();
    assert.equal(registry.size, 0, 'no poller outlives its clients');
    const after = run.snapshots;
    await sleep(POLL_MS * 3);
    assert.equal(run.snapshots, after, 'and it polls no more');
  });

  it('delivers events in order after the cursor, then the terminal event, then ends the stream', async () => {
    const { run, source } = fakeRun();
    const registry = new PollerRegistry(source, POLL_MS);
    const c = client(0);
    registry.subscribe(RUN, seed, c.sub);
    run.log.push(
      itemEvent(1, 'response.output_item.added', 0),
      itemEvent(2, 'response.output_item.done', 0),
    );
    await until(() => c.state.got.length === 2, 'events 1 and 2');
    run.log.push(completedEvent(3));
    run.status = 'completed';
    await until(() => c.state.ended, 'the end');
    assert.deepEqual(c.state.got, [1, 2, 3]);
    assert.equal(registry.size, 0);
  });

  it('gives a client of a finished run its missed events at once, the terminal one a tick later (spec rule 3)', async () => {
    const { run, source } = fakeRun();
    run.log.push(itemEvent(1, 'response.output_item.added', 0), completedEvent(2));
    run.status = 'completed';
    const registry = new PollerRegistry(source, 300);
    const c = client(0);
    const attachedAt = Date.now();
    registry.subscribe(RUN, seed, c.sub);
    run.end(16); // the run's end is no news to a client that was away when it came
    await until(() => c.state.got.length >= 1, 'the missed event');
    assert.deepEqual(c.state.got, [1], 'the terminal event waits for the next tick');
    await until(() => c.state.ended, 'the end');
    assert.deepEqual(c.state.got, [1, 2]);
    assert.ok(Date.now() - attachedAt >= 250, 'about one poll interval later');
  });

  it("announces the status the first look found when that look holds the run's end, not the caller's stale pending", async () => {
    // A stream opened (or reattached) as a run ends: its workflow answers `completed` while its
    // finalize still runs; the record the seed came from still says `pending`.
    const { run, source } = fakeRun();
    run.log.push(itemEvent(1, 'response.output_item.added', 0), completedEvent(2));
    run.status = 'completed';
    const registry = new PollerRegistry(source, POLL_MS);
    const c = client(0);
    registry.subscribe(RUN, seed, c.sub);
    await until(() => c.state.ended, 'the end');
    assert.equal(c.state.status, 'completed');
  });

  it("gives watching clients the run's last events and its end the moment it ends, with no extra query", async () => {
    const { run, source } = fakeRun();
    const registry = new PollerRegistry(source, 60_000);
    const a = client(0);
    const b = client(0);
    registry.subscribe(RUN, seed, a.sub);
    registry.subscribe(RUN, seed, b.sub);
    await until(() => a.state.started && b.state.started, 'both started');
    run.log.push(
      itemEvent(1, 'response.output_item.added', 0),
      itemEvent(2, 'response.output_item.done', 0),
      completedEvent(3),
    );
    run.status = 'completed';
    run.end(16);
    await until(() => a.state.ended && b.state.ended, 'the end, long before the next tick');
    assert.deepEqual(
      [a.state.got, b.state.got],
      [
        [1, 2, 3],
        [1, 2, 3],
      ],
    );
    assert.equal(run.snapshots, 1, 'the first look only');
    assert.equal(registry.size, 0);
  });

  it('leaves an end whose last events do not follow on from the log to the ticks, which page through the rest', async () => {
    const { run, source } = fakeRun();
    const registry = new PollerRegistry(source, 200);
    const c = client(0);
    registry.subscribe(RUN, seed, c.sub);
    await until(() => c.state.started, 'started');
    for (let i = 0; i < 10; i++)
      run.log.push(
        itemEvent(1 + 2 * i, 'response.output_item.added', i),
        itemEvent(2 + 2 * i, 'response.output_item.done', i),
      );
    run.log.push(completedEvent(21));
    run.status = 'completed';
    run.end(4);
    await sleep(50);
    assert.deepEqual(c.state.got, [], 'nothing from an end with a gap before it');
    await until(() => c.state.ended, 'the end, from the ticks');
    assert.deepEqual(
      c.state.got,
      Array.from({ length: 21 }, (_, i) => i + 1),
    );
  });

  it("catches up on a big run's compact answers one right after another, not one a tick", async () => {
    const base = newId('item', 0, () => 0.5);
    const events: RunEvent[] = [
      createdEvent({ runId: RUN, createdAtMs: 0, publishedWorkflowId: 'wf_x' }),
    ];
    for (let code = 0; code < 6_000; code++) events.push(itemEventOf(base, code, events.length));
    const PAGE = 1_000; // events an answer, as the gateway asks them: compact
    let answers = 0;
    const source: PollSource = {
      async snapshot(_runId, after) {
        answers++;
        const from = after + 1;
        const pieces = events
          .slice(from, from + PAGE)
          .map((event) => ('item' in event ? codeToken(itemCodeOf(event as ItemEvent), 1) : event));
        return {
          status: 'running',
          events: [],
          eventCount: events.length,
          compact: { from, itemIdBase: base, pieces },
          output: null,
          error: null,
          total_cost: 0,
          completed_at_ms: null,
        };
      },
      awaitEnd: (_runId, signal) =>
        new Promise((resolve) => signal.addEventListener('abort', () => resolve(null))),
      stored: async () => null,
    };
    const registry = new PollerRegistry(source, 5_000);
    const c = client(0);
    const off = registry.subscribe(RUN, seed, c.sub);
    await until(() => c.state.got.length === events.length - 1, 'every event, well within a tick');
    assert.deepEqual(
      c.state.got,
      Array.from({ length: events.length - 1 }, (_, i) => i + 1),
    );
    assert.equal(answers, Math.ceil(events.length / PAGE), 'one query an answer');
    off();
  });

  it('tells nothing while Temporal is down, and serves the stored log of a run that ended meanwhile', async () => {
    const { run, source } = fakeRun();
    run.down = true;
    const registry = new PollerRegistry(source, POLL_MS);
    const c = client(0);
    registry.subscribe(RUN, seed, c.sub);
    await sleep(POLL_MS * 4);
    assert.equal(c.state.started, false, 'no stale status while no look succeeded');
    run.stored = {
      status: 'completed',
      log: RunLog.of([
        ...run.log,
        itemEvent(1, 'response.output_item.added', 0),
        completedEvent(2),
      ]),
    };
    await until(() => c.state.ended, 'the end from the stored record');
    assert.deepEqual(c.state.got, [1, 2]);
  });

  it('drops every client on shutdown (no [DONE]: they reconnect to another process)', () => {
    const { source } = fakeRun();
    const registry = new PollerRegistry(source, POLL_MS);
    const c = client(0);
    registry.subscribe(RUN, seed, c.sub);
    registry.stopAll();
    assert.deepEqual([c.state.dropped, c.state.ended, registry.size], [true, false, 0]);
  });

  it("ends a deleted run's streams (D39): neither its workflow nor its record is found on two looks", async () => {
    const { run, source } = fakeRun();
    const registry = new PollerRegistry(source, POLL_MS);
    const c = client(0);
    registry.subscribe(RUN, seed, c.sub);
    await until(() => c.state.started, 'the stream opened');
    run.stored = { status: 'running', log: null };
    run.deleted = true; // no workflow, but the record: not deleted (a run no worker has taken yet)
    await sleep(POLL_MS * 4);
    assert.equal(c.state.gone, false);
    run.stored = null;
    await until(() => c.state.gone, 'the stream told the run is gone');
    assert.deepEqual([c.state.ended, c.state.dropped, registry.size], [false, false, 0]);
  });
});
