/**
 * D35: a finished big run's items stay in their blocks for every request but the reads that return
 * them, and those stream them (api/runs/read-run.ts readRunAnswer). Before, a cancel of a finished
 * run, a stream link and a reattached stream each joined every item into the API's memory first:
 * for a million-row run, requests any caller can repeat that could take the API down.
 */
import assert from 'node:assert/strict';
import { logCommands, describeCommands, type CommandLog } from '../../../store/round-trips';
import { findRunLog, findRunRecord } from '../../../store/runs';
import { publish, rowsWorkflow } from '../../support/fixtures';
import { expectError } from '../../support/api-assert';
import { call } from '../../support/http';
import { PRICES } from '../../support/execution';
import { events, openSse } from '../../support/sse';
import { useService } from '../../support/use-service';

const ROWS = 300;

describe('a finished big run: only the reads that return its items read them (D35)', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true, credit: 100, monitorCommands: true, env: { PRICES } });
  let commands: CommandLog;
  before(async () => {
    commands = logCommands(ctx.svc.api.store.client);
    // Concurrency 4: a node of more than 8 rows keeps its items in the store.
    await publish(ctx.svc.url, ctx.key, rowsWorkflow('big-reads', '{{row}}', { concurrency: 4 }));
  });
  after(() => commands?.stop());

  const itemBlockReads = () => {
    const seen = commands.take();
    return { blocks: seen.filter((c) => c.collection === 'item_blocks'), seen };
  };

  it('answers a waited start with every item, refuses a cancel, links and reattaches a stream, reading no item block but for the answer', async () => {
    const rows = Array.from({ length: ROWS }, (_, i) => `r${i}`);
    const started = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'big-reads', inputs: { rows } },
      headers: { prefer: 'wait=60' },
    });
    assert.equal(started.status, 200, JSON.stringify(started.body).slice(0, 300));
    assert.equal(started.body.status, 'completed');
    const runId: string = started.body.id;
    assert.deepEqual(
      started.body.output.answers.map((item: any) => item.parts[0].text),
      rows.map((row) => `echo: ${row}`),
      'the waited answer holds every item, in order',
    );
    const record = (await findRunRecord(ctx.svc.store.collections, runId))!;
    assert.ok(record.stored_outputs?.answers, 'the items are kept in the store (D35)');

    commands.take();
    const read = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(read.status, 200);
    assert.equal(read.body.output.answers.length, ROWS);
    assert.ok(itemBlockReads().blocks.length > 0, 'the GET reads the items it returns');
    // Without its items (the playground pages them instead): the run's head, no item block read.
    const head = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}?include_output=false`, {
      key: ctx.key,
    });
    assert.equal(head.status, 200);
    assert.deepEqual(
      { ...head.body, output: read.body.output },
      read.body,
      'all but the output as the whole read',
    );
    assert.equal(head.body.output, null);
    const headReads = itemBlockReads();
    assert.deepEqual(headReads.blocks, [], describeCommands(headReads.seen));
    expectError(
      await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}?include_output=no`, { key: ctx.key }),
      { status: 400, type: 'invalid_request_error', param: 'include_output' },
    );

    const cancel = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/cancel`, {
      key: ctx.key,
    });
    assert.equal(cancel.status, 409);
    assert.equal(cancel.body.error.code, 'run_not_cancellable');
    const link = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
    });
    assert.equal(link.status, 200, JSON.stringify(link.body));
    // The last item's done event and the terminal one, from the stored log.
    const last = 2 * ROWS;
    const stream = await openSse(
      `${ctx.svc.url}/api/v1/runs/${runId}/stream?starting_after=${last - 1}`,
      { key: ctx.key },
    );
    await stream.closed;
    const resumed = events(stream);
    assert.deepEqual(
      resumed.map((e) => e.type),
      ['response.resumed', 'response.output_item.done', 'response.completed'],
    );
    assert.equal(resumed[1].item.id, started.body.output.answers[ROWS - 1].id);
    const { blocks, seen } = itemBlockReads();
    assert.deepEqual(blocks, [], describeCommands(seen));

    // The whole log again, from the first item: the stream reads it from a log kept compact
    // (domain/run-log.ts), a segment for a block's rows, not an object for each event.
    const stored = (await findRunLog(ctx.svc.store.collections, runId))!.log!;
    assert.ok(
      stored.segmentCount < ROWS / 2,
      `${stored.segmentCount} segments for ${stored.length} events`,
    );
    const replay = await openSse(`${ctx.svc.url}/api/v1/runs/${runId}/stream?starting_after=0`, {
      key: ctx.key,
    });
    await replay.closed;
    assert.deepEqual(events(replay).slice(1), stored.toArray().slice(1));
  });
});
