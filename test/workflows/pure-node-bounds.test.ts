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
import { publish, waitForRun } from '../support/fixtures';
import { call } from '../support/http';
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

/** Input `a` fed `ports` times into one `http_request` (POST, its body the ports and then `tail`). */
function callInputGraph(slug: string, ports: number, tail = '') {
  const names = Array.from({ length: ports }, (_, i) => `a${i + 1}`);
  return {
    slug,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      {
        id: 'h',
        type: 'http_request',
        method: 'POST',
        url: 'http://127.0.0.1:9/',
        body: names.map((n) => `{{${n}}}`).join('') + tail,
      },
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [...names.map((port) => ({ from: 'a', to: 'h', port })), { from: 'h', to: 'o' }],
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

/**
 * A text node that makes `texts` texts of 300 × the input (300,000 lines each of 1,000 short
 * lines), whose lines each of `batches` batches makes rows for `then`: a result itself, or a text
 * node, which keeps so big a list in the store (D35), feeding `results` results.
 */
function linesGraph(
  slug: string,
  texts: number,
  batches: number,
  then: 'result' | 'text',
  results = 1,
) {
  const ids = Array.from({ length: batches }, (_, i) => i);
  const fed = Array.from({ length: results }, (_, j) => j);
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      { id: 'q', type: 'batch', rows: Array.from({ length: texts }, () => '') },
      { id: 't', type: 'text', template: '{{a}}'.repeat(300) + '{{q}}' },
      ...ids.flatMap((i) => [
        { id: `b${i}`, type: 'batch' },
        ...(then === 'text' ? [{ id: `r${i}`, type: 'text', template: '<{{x}}>' }] : []),
        ...fed.map((j) => ({ id: `o${i}-${j}`, type: 'user_result', label: `Out ${i} ${j}` })),
      ]),
    ],
    edges: [
      { from: 'a', to: 't', port: 'a' },
      { from: 'q', to: 't', port: 'q' },
      ...ids.flatMap((i) => [
        { from: 't', to: `b${i}`, port: 'rows' },
        ...(then === 'text'
          ? [
              { from: `b${i}`, to: `r${i}`, port: 'x' },
              ...fed.map((j) => ({ from: `r${i}`, to: `o${i}-${j}` })),
            ]
          : fed.map((j) => ({ from: `b${i}`, to: `o${i}-${j}` }))),
      ]),
    ],
  };
}

/** A request's rows (a JSON text) made a list by a batch that `readers` batch nodes read. */
function readersGraph(slug: string, readers: number) {
  const ids = Array.from({ length: readers }, (_, i) => `n${i}`);
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'r', type: 'user_input', label: 'R', input_type: 'text' },
      { id: 'b', type: 'batch' },
      ...ids.map((id) => ({ id, type: 'batch' })),
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [
      { from: 'r', to: 'b', port: 'rows' },
      ...ids.map((id) => ({ from: 'b', to: id, port: 'rows' })),
      { from: 'r', to: 'o' },
    ],
  };
}

/** linesGraph's 900,000 rows in the store (its text node `r0`'s), read by `readers` text nodes. */
function storedReadersGraph(slug: string, readers: number) {
  const graph = linesGraph(slug, 3, 1, 'text');
  const ids = Array.from({ length: readers }, (_, i) => `n${i}`);
  return {
    ...graph,
    nodes: [...graph.nodes, ...ids.map((id) => ({ id, type: 'text', template: '{{y}}!' }))],
    edges: [...graph.edges, ...ids.map((id) => ({ from: 'r0', to: id, port: 'y' }))],
  };
}

/** One input fed to `results` results. */
function fanOutGraph(slug: string, results: number) {
  const ids = Array.from({ length: results }, (_, i) => i);
  return {
    slug,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      ...ids.map((i) => ({ id: `o${i}`, type: 'user_result', label: `Out ${i}` })),
    ],
    edges: ids.map((i) => ({ from: 'a', to: `o${i}` })),
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
