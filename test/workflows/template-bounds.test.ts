/**
 * A template can repeat a placeholder, so what it fills can be far larger than what fills it
 * (docs/workflow-format.md "Filled templates"). On the real stack: a `text` node's item past its
 * bound fails in place without its text being built, and so does every text item past the text
 * the run may fill in all; a provider request whose templates pass theirs fails its item before
 * any call; a `text` node of a big list fills it in blocks, its items out of the history.
 */
import assert from 'node:assert/strict';
import { RUN_TEXT_MAX_CHARS } from '../../domain/item-blocks';
import { resultsFile } from '../support/files';
import { temporalClient } from '../support/service';
import { rowsWorkflow, textRowsWorkflow } from '../support/fixtures';
import { runToEnd } from '../support/runs';
import { PRICES, START_FEE_USD, texts } from '../support/execution';
import { useService } from '../support/use-service';

/** Input `a` (text) → text nodes of the given templates, each to a result of its own id. */
function textsWorkflow(slug: string, templates: string[]) {
  const nodes: Array<Record<string, unknown>> = [
    { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
  ];
  const edges: Array<Record<string, unknown>> = [];
  templates.forEach((template, i) => {
    nodes.push(
      { id: `t${i}`, type: 'text', template },
      { id: `o${i}`, type: 'user_result', label: `o${i}` },
    );
    edges.push({ from: 'a', to: `t${i}`, port: 'a' }, { from: `t${i}`, to: `o${i}` });
  });
  return { slug, nodes, edges };
}

describe('filled templates are bounded', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true, env: { PRICES } });

  it("fails a text node's item past 1 MiB in place (a 200 MB text was never built), while a node of the same input fills as before", async () => {
    // 1,000 placeholders: the most a template may hold (domain/validate-graph.ts).
    const doc = textsWorkflow('text-bomb', ['{{a}}'.repeat(1_000), 'ok: {{a}}']);
    const run = await runToEnd(ctx.svc.url, ctx.key, doc, { a: 'x'.repeat(200_000) });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual(run.output.o0[0].error, {
      message:
        'the filled template is over the 1048576 byte limit of one item: an item handed on through the run holds at most 1 MiB',
      type: 'template_too_large',
    });
    assert.equal(run.output.o1[0].parts[0].text.length, 200_004);
    assert.equal(run.total_cost, START_FEE_USD);
  });

  it('fills at most RUN_TEXT_MAX_CHARS in the run: the text items past it fail, naming it', async () => {
    // Twelve items of 1,000,000 characters: eight fit in 8 MiB.
    const doc = textsWorkflow(
      'text-budget',
      Array.from({ length: 12 }, () => '{{a}}'.repeat(5)),
    );
    const run = await runToEnd(ctx.svc.url, ctx.key, doc, { a: 'y'.repeat(200_000) });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const items = Array.from({ length: 12 }, (_, i) => run.output[`o${i}`][0]);
    const done = items.filter((item) => item.status === 'completed');
    assert.equal(done.length, Math.floor(RUN_TEXT_MAX_CHARS / 1_000_000));
    for (const item of items.filter((item) => item.status === 'failed')) {
      assert.equal(item.error.type, 'template_too_large');
      assert.match(
        item.error.message,
        /over the 8388608 character limit of the text the text nodes of one run hold/,
      );
    }
  });

  it("fails an llm row whose prompt would pass 1 MiB before its call (rows of 200 KB, 1,000 placeholders: the worker's heap ran out before)", async () => {
    const doc = rowsWorkflow('prompt-bomb', `tag:prompt-bomb ${'{{row}}'.repeat(1_000)}`);
    const rows = Array.from({ length: 4 }, (_, i) => `${i}`.repeat(200_000));
    const run = await runToEnd(ctx.svc.url, ctx.key, doc, { rows });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(run.output.answers.length, 4);
    for (const item of run.output.answers)
      assert.deepEqual(item.error, {
        message:
          "the request's templates would fill more than 1048576 characters, the most one request may hold",
        type: 'template_too_large',
      });
    assert.equal(ctx.fake.requestsWith('tag:prompt-bomb').length, 0);
    assert.equal(run.usage.provider_calls, 0);
    assert.equal(run.total_cost, START_FEE_USD);
  });

  it('fills a text node of a big list in blocks: its items are stored, not in the history', async () => {
    // 5,000 rows (more than twice the concurrency of 4) of 200 characters each: 1 MB of items.
    const doc = textRowsWorkflow('big-text', '{{row}}'.repeat(10), { concurrency: 4 });
    const rows = Array.from({ length: 5_000 }, (_, i) => `row ${i}`.padEnd(20, '.'));
    const run = await runToEnd(ctx.svc.url, ctx.key, doc, { rows });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const items = await resultsFile(ctx.svc.url, ctx.key, run.id, 'out');
    assert.deepEqual(
      texts(items),
      rows.map((row) => row.repeat(10)),
    );
    const { historySize } = await temporalClient(ctx.svc).workflow.getHandle(run.id).describe();
    assert.ok(
      Number(historySize) < 600 * 1024,
      `the items are not in the history (${historySize} bytes)`,
    );
  });
});
