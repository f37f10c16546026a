/**
 * D35: `text`, `select` and `join` given a stored list (a file's rows, the items of a node of more
 * rows than twice its run's concurrency) work as on an inline list: a text node fills its template
 * in blocks, row by row (so file rows → text → llm pipelines); select and join read the list from
 * the store once it is done, so the examples' `batch → llm → join` works at any row count; a
 * `batch` given one stores the rows of its items as a list of its own; a joined item too large for
 * the history stays in the store. A join past 8 MiB, a select out of range and a batch of a failed
 * item fail the run naming the node.
 */
import assert from 'node:assert/strict';
import { JOIN_MAX_BYTES } from '../../activities/stored-lists';
import { uploadFile } from '../support/files';
import { call } from '../support/http';
import { temporalClient } from '../support/service';
import { runToEnd } from '../support/runs';
import { PRICES, texts } from '../support/execution';
import { useService } from '../support/use-service';

/** Lists of more than 8 rows are stored (twice this concurrency). */
const CONCURRENCY = 4;

/** `rows` (a file or a JSON list) → batch → `middle` nodes → the given list nodes and results. */
function listWorkflow(
  slug: string,
  opts: { inputType: 'file' | 'json'; llm?: boolean; after: Array<Record<string, unknown>> },
) {
  const from = opts.llm ? 'ask' : 'split';
  const nodes: Array<Record<string, unknown>> = [
    { id: 'rows', type: 'user_input', label: 'Rows', input_type: opts.inputType },
    { id: 'split', type: 'batch' },
    ...(opts.llm ? [{ id: 'ask', type: 'llm', model: 'gpt-4o-mini', prompt: '{{row}}' }] : []),
  ];
  const edges: Array<Record<string, unknown>> = [
    { from: 'rows', to: 'split', port: 'rows' },
    ...(opts.llm ? [{ from: 'split', to: 'ask', port: 'row' }] : []),
  ];
  for (const node of opts.after) {
    nodes.push(node, { id: `${node.id}_out`, type: 'user_result', label: `${node.id} out` });
    const port = { text: 'row', batch: 'rows' }[node.type as string] ?? 'in';
    edges.push({ from, to: node.id, port });
    edges.push({ from: node.id, to: `${node.id}_out` });
  }
  return { slug, concurrency: CONCURRENCY, nodes, edges };
}

const jsonLines = (rows: string[]) => rows.map((row) => JSON.stringify(row)).join('\n');

describe('text, select, join and batch of stored lists (D35)', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true, env: { PRICES } });

  it("take a big node's items: batch → llm → join and select, as with a short list", async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `row ${i}`);
    const doc = listWorkflow('llm-join', {
      inputType: 'json',
      llm: true,
      after: [
        { id: 'all', type: 'join', separator: ' | ' },
        { id: 'last', type: 'select', index: -1 },
      ],
    });
    const run = await runToEnd(ctx.svc.url, ctx.key, doc, { rows });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const answers = rows.map((row) => `echo: ${row}`);
    assert.deepEqual(texts(run.output.all_out), [answers.join(' | ')]);
    assert.deepEqual(texts(run.output.last_out), [answers[29]]);
  });

  it("a text node fills its template row by row from a file's rows and from a big node's items", async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `line ${i}`);
    const file = await uploadFile(ctx.svc.url, ctx.key, 'questions.jsonl', jsonLines(rows));
    // file rows → text → llm: the prompt built by a text node, as a spreadsheet run would.
    const asking = {
      slug: 'file-text-llm',
      concurrency: CONCURRENCY,
      nodes: [
        { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'file' },
        { id: 'split', type: 'batch' },
        { id: 'say', type: 'text', template: 'Q: {{row}}' },
        { id: 'ask', type: 'llm', model: 'gpt-4o-mini', prompt: '{{q}}' },
        { id: 'questions', type: 'user_result', label: 'Questions' },
        { id: 'answers', type: 'user_result', label: 'Answers' },
      ],
      edges: [
        { from: 'rows', to: 'split', port: 'rows' },
        { from: 'split', to: 'say', port: 'row' },
        { from: 'say', to: 'ask', port: 'q' },
        { from: 'say', to: 'questions' },
        { from: 'ask', to: 'answers' },
      ],
    };
    const run = await runToEnd(ctx.svc.url, ctx.key, asking, { rows: file });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(
      texts(run.output.questions),
      rows.map((row) => `Q: ${row}`),
    );
    assert.deepEqual(
      texts(run.output.answers),
      rows.map((row) => `echo: Q: ${row}`),
    );
    assert.deepEqual(Object.keys(run.usage.by_node), ['ask'], 'a text node makes no call');
    assert.equal(run.usage.provider_calls, 30);

    // big llm → text: the answers of a stored list, post-processed row by row.
    const after = listWorkflow('llm-text', {
      inputType: 'json',
      llm: true,
      after: [{ id: 'say', type: 'text', template: 'A: {{row}}' }],
    });
    const posted = await runToEnd(ctx.svc.url, ctx.key, after, { rows });
    assert.equal(posted.status, 'completed', JSON.stringify(posted.error));
    assert.deepEqual(
      texts(posted.output.say_out),
      rows.map((row) => `A: echo: ${row}`),
    );
  });

  it("take a file's rows, across pages; a failed row fails the join's item", async () => {
    const rows = Array.from({ length: 250 }, (_, i) => (i === 7 ? 'status:400' : `line ${i}`));
    const file = await uploadFile(ctx.svc.url, ctx.key, 'rows.jsonl', jsonLines(rows));
    const plain = listWorkflow('file-join', {
      inputType: 'file',
      after: [
        { id: 'all', type: 'join', separator: '\n' },
        { id: 'pick', type: 'select', index: 120 },
      ],
    });
    const run = await runToEnd(ctx.svc.url, ctx.key, plain, { rows: file });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(texts(run.output.all_out), [rows.join('\n')]);
    assert.deepEqual(texts(run.output.pick_out), ['line 120']);

    const asked = listWorkflow('file-llm-join', {
      inputType: 'file',
      llm: true,
      after: [{ id: 'all', type: 'join' }],
    });
    const failedRow = await runToEnd(ctx.svc.url, ctx.key, asked, { rows: file });
    const [joined] = failedRow.output.all_out;
    assert.equal(joined.status, 'failed', JSON.stringify(joined));
    assert.match(joined.error.message, /^input item 7 from node 'ask' failed: /);
  });

  it('a join past 1 MiB stays in the store, out of the history; past 8 MiB it fails the run naming the node, as a select out of range does', async () => {
    const rows = Array.from({ length: 120 }, (_, i) => `${i} ${'x'.repeat(10_000)}`);
    const file = await uploadFile(ctx.svc.url, ctx.key, 'wide.jsonl', jsonLines(rows));
    const joined = rows.join('\n');
    assert.ok(joined.length > JOIN_MAX_BYTES, 'the rows together pass what the history takes');
    // rows → join → a text node after it: the stored item runs on as any stored list does.
    const doc = listWorkflow('wide-join', {
      inputType: 'file',
      after: [{ id: 'all', type: 'join' }],
    });
    doc.nodes.push(
      { id: 'say', type: 'text', template: 'All: {{x}}' },
      { id: 'said', type: 'user_result', label: 'Said' },
    );
    doc.edges.push({ from: 'all', to: 'say', port: 'x' }, { from: 'say', to: 'said' });
    const run = await runToEnd(ctx.svc.url, ctx.key, doc, { rows: file });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(texts(run.output.all_out), [joined]);
    assert.deepEqual(texts(run.output.said), [`All: ${joined}`]);
    const page = await call(ctx.svc.url, 'GET', `/api/v1/runs/${run.id}/outputs/all_out`, {
      key: ctx.key,
    });
    assert.deepEqual(texts(page.body.data), [joined]);
    const { historySize } = await temporalClient(ctx.svc).workflow.getHandle(run.id).describe();
    assert.ok(
      Number(historySize) < 256 * 1024,
      `the joined item is not in the history (${historySize} bytes)`,
    );

    const huge = Array.from({ length: 90 }, (_, i) => `${i} ${'z'.repeat(100 * 1024)}`);
    const hugeFile = await uploadFile(ctx.svc.url, ctx.key, 'huge.jsonl', jsonLines(huge));
    const cases = [
      {
        node: { id: 'pick', type: 'select', index: -121 },
        file,
        error: /^node 'pick' \(select\): index -121 is out of range for 120 item\(s\)$/,
      },
      {
        node: { id: 'all', type: 'join' },
        file: hugeFile,
        error:
          /^node 'all' \(join\): the joined item would be larger than 8 MiB \(at row 8\d of 90\)/,
      },
    ];
    for (const { node, file: rowsFile, error } of cases) {
      const refused = listWorkflow(`refused-${node.type}`, { inputType: 'file', after: [node] });
      const failed = await runToEnd(ctx.svc.url, ctx.key, refused, { rows: rowsFile });
      assert.equal(failed.status, 'failed', node.type);
      assert.match(failed.error, error);
    }
  });

  it("a batch splits a big node's items into rows of their own, across pages, which run on; a failed item fails it", async () => {
    // Each answer ("echo: q<i>\nr<i>") is two lines: 80 answers, 160 rows of the second batch.
    const rows = Array.from({ length: 80 }, (_, i) => `q${i}\nr${i}`);
    const doc = (slug: string) => ({
      slug,
      concurrency: CONCURRENCY,
      nodes: [
        { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
        { id: 'split', type: 'batch' },
        { id: 'ask', type: 'llm', model: 'gpt-4o-mini', prompt: '{{row}}' },
        { id: 'again', type: 'batch' },
        { id: 'say', type: 'text', template: 'S: {{row}}' },
        { id: 'lines', type: 'user_result', label: 'Lines' },
        { id: 'said', type: 'user_result', label: 'Said' },
      ],
      edges: [
        { from: 'rows', to: 'split', port: 'rows' },
        { from: 'split', to: 'ask', port: 'row' },
        { from: 'ask', to: 'again', port: 'rows' },
        { from: 'again', to: 'say', port: 'row' },
        { from: 'again', to: 'lines' },
        { from: 'say', to: 'said' },
      ],
    });
    const run = await runToEnd(ctx.svc.url, ctx.key, doc('llm-batch'), { rows });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const lines = rows.flatMap((_, i) => [`echo: q${i}`, `r${i}`]);
    assert.deepEqual(texts(run.output.lines), lines);
    assert.deepEqual(
      texts(run.output.said),
      lines.map((line) => `S: ${line}`),
    );

    rows[41] = 'status:400';
    const failed = await runToEnd(ctx.svc.url, ctx.key, doc('llm-batch-failed'), { rows });
    assert.equal(failed.status, 'failed');
    assert.match(failed.error, /^node 'again' \(batch\): rows input failed: /);
  });
});
