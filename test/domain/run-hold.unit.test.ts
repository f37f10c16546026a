/** D17: a run's hold from its graph, inputs and the price table (domain/run-hold.ts). */
import assert from 'node:assert/strict';
import { WorkflowDocumentSchema, type WorkflowDocumentInput } from '../../domain/graph';
import { runHold, type HoldOptions } from '../../domain/run-hold';

const price = (p: Partial<HoldOptions['prices'][string]>) => ({
  input_per_mtok: 0,
  output_per_mtok: 0,
  per_image: 0,
  per_second: 0,
  ...p,
});
const OPTS: HoldOptions = {
  startFeeUsd: 0.001,
  perCallUsd: 0.01,
  prices: {
    'img-test': price({ per_image: 0.04 }),
    'gpt-test': price({ input_per_mtok: 1, output_per_mtok: 2 }),
    'owner/video': price({ per_second: 0.002 }),
  },
};

const hold = (doc: Omit<WorkflowDocumentInput, 'slug'>, inputs: Record<string, unknown> = {}) =>
  runHold(WorkflowDocumentSchema.parse({ slug: 'w', ...doc }), inputs, OPTS);

describe('runHold (D17)', () => {
  it('is the start fee alone for a run of free nodes, exactly', () => {
    assert.deepEqual(
      hold({
        nodes: [
          { id: 't', type: 'text', template: 'hi' },
          { id: 'ask', type: 'llm', model: 'unpriced', prompt: 'x' },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [{ from: 't', to: 'out' }],
      }),
      { usd: 0.001, exact: true },
    );
  });

  it('bounds images exactly: per_image × n × the rows of a batch given in an input', () => {
    const doc = {
      nodes: [
        { id: 'rows', type: 'user_input' as const, label: 'Rows', input_type: 'json' as const },
        { id: 'each', type: 'batch' as const },
        {
          id: 'draw',
          type: 'image_generation' as const,
          model: 'img-test',
          prompt: '{{row}}',
          n: 2,
        },
        { id: 'out', type: 'user_result' as const, label: 'Images' },
      ],
      edges: [
        { from: 'rows', to: 'each', port: 'rows' },
        { from: 'each', to: 'draw', port: 'row' },
        { from: 'draw', to: 'out' },
      ],
    };
    assert.deepEqual(hold(doc, { rows: ['a', 'b', 'c'] }), {
      usd: 0.241,
      exact: true,
    });
    assert.deepEqual(hold(doc, { rows: 'a\n\nb\n' }), { usd: 0.161, exact: true });
    // Rows in a file (D31) are known only while the run works: held as one call, not a bound.
    assert.deepEqual(hold(doc, { rows: 'file_01ARZ3NDEKTSV4RRFFQ69G5FAV' }), {
      usd: 0.081,
      exact: false,
    });
  });

  it('holds token- and time-priced calls at the per-call estimate, per row of a batch in the node', () => {
    assert.deepEqual(
      hold({
        nodes: [
          { id: 'each', type: 'batch', rows: [1, 2, 3, 4] },
          { id: 'ask', type: 'llm', model: 'gpt-test', prompt: '{{row}}' },
          { id: 'video', type: 'model', model: 'owner/video', input: { p: '{{in}}' } },
          { id: 'one', type: 'join' },
          { id: 'out', type: 'user_result', label: 'Out' },
        ],
        edges: [
          { from: 'each', to: 'ask', port: 'row' },
          { from: 'ask', to: 'one' },
          { from: 'one', to: 'video', port: 'in' },
          { from: 'video', to: 'out' },
        ],
      }),
      { usd: 0.051, exact: false },
    );
  });

  it("counts a node after an llm's list output as one call: its size is known only while the run works", () => {
    assert.deepEqual(
      hold({
        nodes: [
          { id: 'ideas', type: 'llm', model: 'unpriced', prompt: 'list:a,b,c', output: 'list' },
          { id: 'draw', type: 'image_generation', model: 'img-test', prompt: '{{idea}}' },
          { id: 'out', type: 'user_result', label: 'Images' },
        ],
        edges: [
          { from: 'ideas', to: 'draw', port: 'idea' },
          { from: 'draw', to: 'out' },
        ],
      }),
      { usd: 0.041, exact: false },
    );
  });
});
