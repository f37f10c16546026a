/** D38: which AI nodes a re-run of failed items may carry over (workflows/carry-over.ts), and the inline path. */
import assert from 'node:assert/strict';
import type { WorkflowDocument } from '../../domain/graph';
import {
  CarryOver,
  FailedRows,
  carriableNodes,
  inlineFeeders,
  planBlocks,
} from '../../workflows/carry-over';
import type { RunFinal } from '../../domain/run';

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

  it('plans blocks over whole pages with the failed rows spread over the lanes', () => {
    // One failed row a page (10,000 rows): 100 failed rows over 16 lanes, 7 a block.
    const spread = planBlocks(
      10_000,
      Array.from({ length: 100 }, (_, k) => k * 100 + 42),
      16,
    );
    assert.equal(spread.length, 15);
    assert.deepEqual(spread[0], { first: 0, count: 700, run: [42, 142, 242, 342, 442, 542, 642] });
    assert.deepEqual(spread.at(-1), { first: 9800, count: 200, run: [9842, 9942] });
    // Blocks cover every row once, in order.
    let next = 0;
    for (const block of spread) {
      assert.equal(block.first, next);
      next += block.count;
    }
    assert.equal(next, 10_000);
    // Rows with no failed row go in blocks of at most 100 pages; a last partial page is kept.
    assert.deepEqual(
      planBlocks(25_050, [3], 16).map((b) => [b.first, b.count, b.run]),
      [
        [0, 100, [3]],
        [100, 10_000, []],
        [10_100, 10_000, []],
        [20_100, 4_950, []],
      ],
    );
  });

  it('runs the known failed rows of a node of at most 100,000 rows as one block', () => {
    // g: rows → split → a (stored by the parent, its failed rows listed) → b → result.
    const source = (count: number) => ({
      stored: ['a', 'b'],
      inline: {},
      failed: { a: { count, rows: [42, 9_942] } },
    });
    const carry = new CarryOver(g, source(100_000), 'run_parent');
    assert.deepEqual(carry.onePlan('a', 100_000), [{ first: 0, count: 100_000, run: [42, 9_942] }]);
    // Another count than the listed one, a node without a list, a bigger node: not this plan.
    assert.equal(carry.onePlan('a', 99_999), undefined);
    assert.equal(carry.onePlan('b', 100_000), undefined);
    const big = new CarryOver(g, source(100_001), 'run_parent');
    assert.equal(big.onePlan('a', 100_001), undefined);
    assert.equal(big.plan('a', 100_001)?.[0].first, 0); // the 16 lanes' plan instead
  });

  it('lists a completed run’s failed rows only when every block said which', () => {
    const final = (status: RunFinal['status']) =>
      ({
        status,
        storedOutputs: {
          a: { node: 'a', count: 2000, pageRows: 100, idOffset: 0 },
          b: { node: 'b', count: 2000, pageRows: 100, idOffset: 2000 },
        },
      }) as unknown as RunFinal;
    const rows = new FailedRows();
    rows.note('a', [1500, 1501]);
    rows.note('a', [7]);
    rows.note('b', [3]);
    rows.note('b', undefined); // a block over FAILED_ROWS_PER_BLOCK, or an answer recorded before
    rows.note('b', [1200]);
    const attached = rows.attach(final('completed')).storedOutputs!;
    assert.deepEqual(attached.a.failed, [7, 1500, 1501]);
    assert.equal(attached.b.failed, undefined);
    assert.equal(rows.attach(final('failed')).storedOutputs!.a.failed, undefined);
  });
});
