/**
 * The work a run's pure nodes do inside the workflow is bounded (patch `text-work-bound`): a few
 * KB of graph whose `text` nodes copy a large input into every row, fill thousands of placeholders
 * that render nothing or reach down long paths, or `join` rows with a long separator each kept one
 * workflow task busy past
 * 5 s, where the SDK's deadlock detector fires inside the sandbox and Node aborts the whole worker
 * (and every worker the task was retried on). Now each such item fails in place, the run ends, and
 * the worker serves on. The worker here is the production entry in a child process: on the old
 * code it died, which the test sees instead of dying with it.
 */
import assert from 'node:assert/strict';
import { publish, waitForRun } from '../support/fixtures';
import { startRun } from '../support/runs';
import { useService } from '../support/use-service';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/** `nodes` text nodes of `template` over input `a` and the `rows` rows of a batch written in the graph. */
function textGraph(slug: string, nodes: number, rows: number, template: string) {
  const ids = Array.from({ length: nodes }, (_, i) => `t${i}`);
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      { id: 'b', type: 'batch', rows: Array.from({ length: rows }, () => '') },
      ...ids.map((id) => ({ id, type: 'text', template })),
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [
      ...ids.flatMap((id) => [
        { from: 'a', to: id, port: 'a' },
        { from: 'b', to: id, port: 'r' },
      ]),
      { from: ids.at(-1)!, to: 'o' },
    ],
  };
}

/** One `join` of a batch of `rows` empty rows with a separator of `separator` characters. */
function joinGraph(slug: string, rows: number, separator: number) {
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'b', type: 'batch', rows: Array.from({ length: rows }, () => '') },
      { id: 'j', type: 'join', separator: '-'.repeat(separator) },
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [
      { from: 'b', to: 'j' },
      { from: 'j', to: 'o' },
    ],
  };
}

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
});
