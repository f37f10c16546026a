/** D38: which AI nodes a re-run of failed items may carry over (workflows/carry-over.ts), and the inline path. */
import assert from 'node:assert/strict';
import type { WorkflowDocument } from '../../domain/graph';
import { CarryOver, carriableNodes, inlineFeeders } from '../../workflows/carry-over';

const llm = (id: string, prompt = '{{in}}') => ({ id, type: 'llm', model: 'm', prompt });
const graph = (nodes: unknown[], edges: Array<[string, string, string?]>) =>
  ({
    slug: 'g',
    nodes,
    edges: edges.map(([from, to, port]) => ({ from, to, ...(port ? { port } : {}) })),
  }) as unknown as WorkflowDocument;

describe('re-run carry-over (D38)', () => {
  // rows → batch → a → b → result "B"; a → join → c → result "C"
  const g = graph(
    [
      { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
      { id: 'split', type: 'batch' },
      llm('a'),
      llm('b'),
      { id: 'joined', type: 'join' },
      llm('c'),
      { id: 'rb', type: 'user_result', label: 'B' },
      { id: 'rc', type: 'user_result', label: 'C' },
    ],
    [
      ['rows', 'split', 'rows'],
      ['split', 'a', 'in'],
      ['a', 'b', 'in'],
      ['b', 'rb'],
      ['a', 'joined', 'in'],
      ['joined', 'c', 'in'],
      ['c', 'rc'],
    ],
  );

  it('carries a chain of stored AI nodes, and nothing downstream of a join over AI results', () => {
    const all = carriableNodes(g, { stored: ['a', 'b', 'c'], inline: {} });
    assert.deepEqual([...all].sort(), ['a', 'b']);
  });

  it('runs again whole an AI node whose items the parent does not hold, and what follows it', () => {
    // A small run: only `b` and `c` feed results, so `a`'s items are not in the parent's record.
    assert.deepEqual(inlineFeeders(g), { b: 'b', c: 'c' });
    assert.deepEqual([...carriableNodes(g, { stored: [], inline: { b: [], c: [] } })], []);
    // A single layer of AI nodes over the rows is carried.
    const one = graph(
      [
        { id: 'split', type: 'batch', rows: ['x', 'y'] },
        llm('a'),
        { id: 'r', type: 'user_result', label: 'Answers' },
      ],
      [
        ['split', 'a', 'in'],
        ['a', 'r'],
      ],
    );
    assert.deepEqual(inlineFeeders(one), { a: 'answers' });
    assert.deepEqual([...carriableNodes(one, { stored: [], inline: { a: [] } })], ['a']);
  });

  it('reports carried rows done without running them and runs the rest', async () => {
    const one = graph(
      [
        { id: 'split', type: 'batch', rows: ['x', 'y', 'z'] },
        llm('a'),
        { id: 'r', type: 'user_result', label: 'R' },
      ],
      [
        ['split', 'a', 'in'],
        ['a', 'r'],
      ],
    );
    const kept = {
      status: 'completed' as const,
      parts: [{ type: 'text' as const, text: 'old y' }],
    };
    const carry = new CarryOver(one, { stored: [], inline: { a: [[1, kept]] } }, 'run_parent');
    const ran: number[] = [];
    const done = new Map<number, unknown>();
    const rows = [0, 1, 2].map((index) => ({ index, ports: {} }));
    await carry.wrap(async (_node, some) => {
      ran.push(...some.map((r) => r.index));
    })(one.nodes[1] as never, rows, {
      started: () => undefined,
      done: (i, items) => done.set(i, items),
    });
    assert.deepEqual(ran, [0, 2]);
    assert.deepEqual(done.get(1), [kept]);
    assert.deepEqual(carry.blockSource('a'), { carryFrom: 'run_parent' });
  });
});
