/**
 * A large run's end in chunks (domain/run-chunks.ts, tools/bench/FINDINGS.md P4): split and joined
 * back exactly, and end to end a run too large for one Temporal payload completes, reads back
 * whole (GET and a stream replayed from the record) and leaves no chunk behind after retention.
 */
import assert from 'node:assert/strict';
import { splitFinal, joinOutput, logOfChunks } from '../../domain/run-chunks';
import { type RunArgs } from '../../workflows/definitions';
import { SNAPSHOT_EVENTS, type RunEvent, type RunFinal } from '../../domain/run';
import { RunState } from '../../workflows/run-state';
import { idAtOffset } from '../../domain/ids';
import { removeRunsOlderThan } from '../../store/retention';
import { publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { events, openSse } from '../support/sse';
import { useService } from '../support/use-service';
import { fromStored } from '../../store/runs';

const BASE = 'item_01JAAAAAAAAAAAAAAAAAAAAAAA';

function bigFinal(items: number): RunFinal {
  const created = {
    type: 'response.created',
    sequence_number: 0,
    response: {
      id: 'run_1',
      run_id: 'run_1',
      created_at: 0,
      workflow_id: 'wf_1',
      service_tier: null,
    },
  } as RunEvent;
  const itemEvents: RunEvent[] = Array.from({ length: items }, (_, i) => ({
    type: 'response.output_item.done',
    sequence_number: i + 1,
    output_index: i,
    item: { type: 'message', id: idAtOffset(BASE, i), phase: 'final_answer' },
  }));
  const done = {
    type: 'response.completed',
    sequence_number: items + 1,
    response: { usage: null, service_tier: null },
  } as RunEvent;
  return {
    runId: 'run_1',
    accountId: 'acct_1',
    status: 'completed',
    output: {
      answers: Array.from({ length: items }, (_, i) => ({
        id: idAtOffset(BASE, i),
        item_index: i,
        status: 'completed' as const,
        parts: [{ type: 'text' as const, text: `answer ${i}`.repeat(10) }],
      })),
      nothing: [],
    },
    error: null,
    totalCost: 1,
    completedAtMs: 0,
    events: [created, ...itemEvents, done],
    itemIdBase: BASE,
  };
}

describe('run chunks: a large run end in pieces', () => {
  it('keeps a small run in one piece', () => {
    const final = bigFinal(3);
    const { final: head, chunks } = splitFinal(final);
    assert.equal(chunks.length, 0);
    assert.deepEqual(head, { ...final, chunks: 0 });
  });

  it('cuts a large one into chunks under the byte bound and joins them back exactly', () => {
    const final = bigFinal(2_000);
    const { final: head, chunks } = splitFinal(final, 16 * 1024);
    assert.ok(chunks.length > 10, `${chunks.length} chunks`);
    assert.equal(head.chunks, chunks.length);
    assert.deepEqual(
      head.events,
      [final.events[0], final.events.at(-1)],
      'the record keeps the created and terminal events',
    );
    assert.deepEqual(head.output, { answers: [], nothing: [] }, 'every label stays in the record');
    for (const chunk of chunks)
      assert.ok(
        JSON.stringify({ events: chunk.itemEvents, output: chunk.output }).length <=
          16 * 1024 + 100,
        `chunk ${chunk.index}`,
      );
    const compact = chunks.map((chunk) => chunk.itemEvents.length).reduce((a, b) => a + b, 0);
    assert.ok(compact < 2_000 * 6, `item events take ${compact} bytes, a few per event`);
    const reversed = [...chunks].reverse(); // order comes from the index, not the list
    const log = logOfChunks({ ...head, item_id_base: head.itemIdBase }, reversed);
    assert.deepEqual(log.toArray(), final.events);
    assert.deepEqual(joinOutput(head, reversed), final.output);
  });

  describe('end to end', function () {
    this.timeout(120_000);
    const ctx = useService({ account: false });

    it('completes a run whose output exceeds one payload, and serves it whole from the record', async () => {
      const acct = await ctx.newAccount();
      // 100 rows: not a big list at the run's concurrency (D35), so the text's items stay in the run.
      const count = 100;
      const rows = Array.from({ length: count }, (_, i) => `row ${i} `.repeat(300));
      await publish(ctx.svc.url, acct.key, {
        slug: 'wide',
        concurrency: 64,
        nodes: [
          { id: 'rows', type: 'batch', rows },
          { id: 'echo', type: 'text', template: `echo: ${'{{row}}'.repeat(5)}` }, // 1.3 MB of output: more than one chunk
          { id: 'out', type: 'user_result', label: 'Echoes' },
        ],
        edges: [
          { from: 'rows', to: 'echo', port: 'row' },
          { from: 'echo', to: 'out' },
        ],
      });
      const started = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
        key: acct.key,
        body: { workflowId: 'wide' },
      });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const runId = started.body.run_id;
      const run = await waitForRun(ctx.svc.url, acct.key, runId, 90_000);
      assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));

      // Completed in the run's own view moments before its record is written.
      const record = await waitFor(
        async () => {
          const doc = await ctx.svc.store.collections.runs.findOne({ _id: runId });
          return doc?.finalized ? fromStored(doc) : undefined;
        },
        { what: 'the final record' },
      );
      assert.ok((record.chunks ?? 0) > 1, `chunks: ${record.chunks}`);
      assert.deepEqual(
        record.events?.map((e) => e.type),
        ['response.created', 'response.completed'],
        'the record keeps the first and last events; the chunks hold the rest',
      );
      assert.equal(
        await ctx.svc.store.collections.runChunks.countDocuments({ run_id: runId }),
        record.chunks,
      );

      const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: acct.key });
      const items = read.body.output.echoes;
      assert.equal(items.length, count);
      items.forEach((item: any, i: number) => {
        assert.equal(item.item_index, i);
        assert.equal(item.parts[0].text, `echo: ${rows[i].repeat(5)}`);
      });

      // Temporal forgets nothing here, but the stream of a finalized run is served from the record.
      const stream = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream?starting_after=0`, {
        key: acct.key,
      });
      await stream.closed;
      const seen = events(stream).filter((e) => e.type !== 'response.resumed');
      assert.equal(
        seen.length,
        2 * count + 1,
        'after response.created: added and done per item, then completed',
      );
      seen.forEach((e, i) => assert.equal(e.sequence_number, i + 1));
      assert.equal(seen.at(-1).type, 'response.completed');

      await removeRunsOlderThan(ctx.svc.store.collections, new Date(Date.now() + 1_000));
      assert.equal(await ctx.svc.store.collections.runs.countDocuments({ _id: runId }), 0);
      assert.equal(await ctx.svc.store.collections.runChunks.countDocuments({ run_id: runId }), 0);
    });
  });
});

describe('snapshot answers stay within one gRPC message', () => {
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
        { id: 'echo', type: 'text', template: 'x' },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [{ from: 'echo', to: 'out' }],
    },
    inputs: {},
    options: { startFeeUsd: 0 },
  } as unknown as RunArgs;

  function finishedRun(items: number, text: string): RunState {
    const state = new RunState(args, { now: () => 0, random: Math.random });
    for (let i = 0; i < items; i++)
      state.iterationDone('echo', i, [{ status: 'completed', parts: [{ type: 'text', text }] }]);
    state.finish('completed');
    return state;
  }

  it(`pages the event log by ${SNAPSHOT_EVENTS} events`, () => {
    const state = finishedRun(3_000, 'x');
    const first = state.snapshot(-1);
    assert.equal(first.eventCount, 1 + 2 * 3_000 + 1);
    assert.equal(first.events.length, SNAPSHOT_EVENTS);
    const second = state.snapshot(first.events.at(-1)!.sequence_number);
    assert.equal(second.events[0].sequence_number, SNAPSHOT_EVENTS);
    assert.equal(second.events.at(-1)!.type, 'response.completed');
  });

  it('leaves out an output too large for an answer, and says so', () => {
    const small = finishedRun(10, 'x').snapshot(Number.MAX_SAFE_INTEGER);
    assert.equal(small.output?.out.length, 10);
    assert.equal(small.outputDeferred, undefined);
    const large = finishedRun(300, 'x'.repeat(4_000)).snapshot(Number.MAX_SAFE_INTEGER);
    assert.equal(large.status, 'completed');
    assert.equal(large.output, null);
    assert.equal(large.outputDeferred, true);
  });
});
