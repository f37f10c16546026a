/**
 * The work a run's pure nodes do inside the workflow is bounded (patch `text-work-bound`): a few
 * KB of graph whose `text` nodes copy a large input into every row, fill thousands of placeholders
 * that render nothing or reach down long paths, or `join` rows with a long separator each kept one
 * workflow task busy past
 * 5 s, where the SDK's deadlock detector fires inside the sandbox and Node aborts the whole worker
 * (and every worker the task was retried on). Now each such item fails in place, the run ends, and
 * the worker serves on. So do graphs past what a run makes, holds and reads in all (a batch's rows,
 * a result's items, the lists its nodes read: domain/run-size.ts): the run fails naming the node. The worker here is the production entry in a child process: on the old
 * code it died, which the test sees instead of dying with it.
 */
import assert from 'node:assert/strict';
import {
  callInputGraph,
  fanOutGraph,
  joinGraph,
  linesGraph,
  readersGraph,
  storedReadersGraph,
  textGraph,
} from '../support/bound-graphs';
import { publish, waitForRun } from '../support/fixtures';
import { call } from '../support/http';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

describe('pure nodes in the workflow: bounded work', function () {
  this.timeout(240_000);
  const ctx = useService({ worker: false });
  let worker: WorkerProcess;
  before(() => {
    worker = startWorkerProcess(ctx.svc.config);
  });
  after(async () => worker?.kill());

  const cases = [
    {
      what: 'a 1,000,000-character input copied into 128 rows of 40 text nodes',
      graph: textGraph('copies', 40, 128, '{{a}}{{r}}'),
      inputs: { a: 'x'.repeat(1_000_000) },
    },
    {
      what: '128 rows of 40 text nodes of 999 placeholders that render nothing',
      graph: textGraph('lookups', 40, 128, '{{r}}'.repeat(999) + '{{a}}'),
      inputs: { a: '' },
    },
    {
      what: '128 rows of a text node of 999 placeholders of 438 steps each (880 KB read a row)',
      graph: textGraph('paths', 1, 128, `{{a${'.x'.repeat(438)}}}`.repeat(999) + '{{r}}'),
      inputs: { a: '' },
    },
    {
      what: 'a join of 128 rows with a separator of 400,000 characters',
      graph: joinGraph('separators', 128, 400_000),
      inputs: {},
    },
  ];
  for (const { what, graph, inputs } of cases)
    it(`ends a run of ${what}, its items failed in place, and the worker serves on`, async () => {
      await publish(ctx.svc.url, ctx.key, graph);
      const runId = await startRun(ctx.svc.url, ctx.key, graph.slug, inputs);
      const run = await waitForRun(ctx.svc.url, ctx.key, runId, 120_000);
      assert.equal(worker.child.exitCode, null, `the worker died: ${worker.stderr().slice(-500)}`);
      const items = run.output?.out ?? [];
      assert.ok(items.length > 0, JSON.stringify(run).slice(0, 500));
      assert.equal(items.at(-1).error?.type, 'template_too_large', JSON.stringify(items.at(-1)));
    });

  // What the run makes, holds and reads in all (patches `run-items-bound`, `inline-reads-bound`,
  // `run-blocks-bound`): on the old code the worker died in the first three, the fifth held a task
  // 4.9 s and failed 220 s later at the history's event limit, the last made a 12,000,000-event log.
  const lines = { a: 'x\n'.repeat(1000) };
  const failing = [
    {
      what: 'a result would hold the 900,000 rows a batch made of a text',
      graph: linesGraph('lines-result', 3, 1, 'result'),
      inputs: lines,
      error:
        /node 'o0-0' \(user_result\): would hold 900000 more output items in the run, past the 200000/,
    },
    {
      what: 'eight batches would make 900,000 rows each of one text',
      graph: linesGraph('lines-batches', 3, 8, 'text'),
      inputs: lines,
      error: /node 'b\d' \(batch\): would make 900000 more rows in the run, past the 1000000/,
    },
    {
      what: "495 batches would read a request's 100,000 rows each",
      graph: readersGraph('readers', 495),
      inputs: { r: JSON.stringify(Array.from({ length: 100_000 }, () => [0])) },
      error: /would read 100000 more items of lists in the run, past the 2000000/,
    },
    {
      what: 'five batches would count 2,400,000 lines each (they stop past 1,000,000)',
      graph: linesGraph('lines-count', 8, 5, 'text'),
      inputs: lines,
      error: /\(batch\): has more than 1000000 rows/,
    },
    {
      what: '50 text nodes would read 900,000 stored rows in 45,000 blocks',
      graph: storedReadersGraph('stored-readers', 50),
      inputs: lines,
      error: /node 'n3' \(text\): would run 900 more blocks of rows, past the 4000/,
    },
    {
      what: "an http_request's call would take four copies of a 600 KB input (Temporal terminated the run)",
      graph: callInputGraph('call-input', 4),
      inputs: { a: 'x'.repeat(600_000) },
      error:
        /node 'h' \(http_request\): a call's input would be \d+ bytes of JSON .* past the 1572864/,
    },
    {
      what: "an http_request's call would take 1.56 MB of three-byte characters and a 600 KB body template (a first check counted characters of the rows alone)",
      graph: callInputGraph('call-input-wide', 2, 'p'.repeat(600_000)),
      inputs: { a: '日'.repeat(260_000) },
      error: /node 'h' \(http_request\): a call's input would be \d+ bytes of JSON/,
    },
    {
      what: '20 results would hold 300,000 stored rows each',
      graph: linesGraph('lines-fan-out', 1, 1, 'text', 20),
      inputs: lines,
      error: /would hold 6000000 more output items, past the 4000000 of one run's outputs in all/,
    },
  ];
  for (const { what, graph, inputs, error } of failing)
    it(`fails a run where ${what}, and the worker serves on`, async () => {
      await publish(ctx.svc.url, ctx.key, graph);
      const runId = await startRun(ctx.svc.url, ctx.key, graph.slug, inputs);
      const run = await waitForRun(ctx.svc.url, ctx.key, runId, 120_000);
      assert.equal(worker.child.exitCode, null, `the worker died: ${worker.stderr().slice(-500)}`);
      assert.equal(run.status, 'failed', JSON.stringify(run).slice(0, 500));
      assert.match(run.error, error);
    });

  it('fails in place the output items past what a run holds: one 1 MB input fed to 499 results', async () => {
    const graph = fanOutGraph('fan-out', 499);
    await publish(ctx.svc.url, ctx.key, graph);
    const runId = await startRun(ctx.svc.url, ctx.key, graph.slug, { a: 'x'.repeat(1_000_000) });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId, 120_000);
    assert.equal(run.status, 'completed', JSON.stringify(run).slice(0, 500));
    const first = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/out_0`, {
      key: ctx.key,
    });
    assert.equal(first.body.data[0].parts[0].text.length, 1_000_000);
    const last = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}/outputs/out_498`, {
      key: ctx.key,
    });
    assert.equal(last.body.data[0].error?.type, 'output_too_large', JSON.stringify(last.body));
  });
});
