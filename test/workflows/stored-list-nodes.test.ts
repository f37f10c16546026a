/**
 * D35: `select` and `join` given a stored list (a file's rows, the items of a node of more rows
 * than twice its run's concurrency) read it from the store once it is done, as the inline nodes
 * would: the examples' `batch → llm → join` works at any row count. A join too large for one item,
 * a select out of range and a `text` node given a stored list fail the run naming the node.
 */
import assert from 'node:assert/strict';
import { JOIN_MAX_BYTES } from '../../activities/stored-lists';
import { uploadFile } from '../support/files';
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
    edges.push({ from, to: node.id, port: node.type === 'text' ? 'row' : 'in' });
    edges.push({ from: node.id, to: `${node.id}_out` });
  }
  return { slug, concurrency: CONCURRENCY, nodes, edges };
}

const jsonLines = (rows: string[]) => rows.map((row) => JSON.stringify(row)).join('\n');

describe('select and join of stored lists (D35)', function () {
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

  it('fail the run naming the node: a select out of range, a join too large, a text node', async () => {
    const rows = Array.from({ length: 120 }, (_, i) => `${i} ${'x'.repeat(10_000)}`);
    const file = await uploadFile(ctx.svc.url, ctx.key, 'wide.jsonl', jsonLines(rows));
    assert.ok(rows.join('').length > JOIN_MAX_BYTES, 'the rows together pass the join limit');
    const cases = [
      {
        node: { id: 'pick', type: 'select', index: -121 },
        error: /^node 'pick' \(select\): index -121 is out of range for 120 item\(s\)$/,
      },
      {
        node: { id: 'all', type: 'join' },
        error:
          /^node 'all' \(join\): the joined item would be larger than 1 MiB \(at row 10\d of 120\)/,
      },
      {
        node: { id: 'say', type: 'text', template: '{{row}}' },
        error:
          /^node 'say' \(text\): cannot take the 120 rows of node 'split', which are kept in the store/,
      },
    ];
    for (const { node, error } of cases) {
      const doc = listWorkflow(`refused-${node.type}`, { inputType: 'file', after: [node] });
      const run = await runToEnd(ctx.svc.url, ctx.key, doc, { rows: file });
      assert.equal(run.status, 'failed', node.type);
      assert.match(run.error, error);
    }
  });
});
