/**
 * workflows/engine.ts through its seam, EngineHooks, with no Temporal: the hooks are fakes that
 * answer I/O nodes from a table and record what the engine reported, so the graph semantics
 * (ordering, parallel branches, iteration, failed items keeping their place, node failures) are
 * checked in milliseconds. The same engine runs inside the workflow in test/workflows/execution.test.ts.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WorkflowDocumentSchema, type WorkflowDocument } from '../../domain/graph';
import type { ItemRef } from '../../domain/item-blocks';
import type { Item } from '../../domain/parts';
import { executeGraph, type EngineHooks, type StoredListNodes } from '../../workflows/engine';
import { type IoNode } from '../../activities/types';
import { NodeFailure } from '../../workflows/errors';
import { completed, failed, itemText } from '../../domain/items';

function example(name: string): WorkflowDocument {
  return WorkflowDocumentSchema.parse(
    JSON.parse(
      fs.readFileSync(path.resolve(__dirname, '..', '..', 'examples', `${name}.json`), 'utf8'),
    ),
  );
}

/** Fake hooks: `answer` plays the provider, one row at a time, all rows at once; every report is recorded in order. */
function fakeHooks(
  answer: (node: IoNode, iteration: number, ports: Record<string, Item>) => Promise<Item[]>,
) {
  const log: string[] = [];
  const done = new Map<string, Item[][]>();
  const hooks: EngineHooks = {
    runIoRows: async (node, rows, progress) => {
      await Promise.all(
        rows.map(async (row) => {
          progress.started(row.index);
          progress.done(row.index, await answer(node, row.index, row.ports));
        }),
      );
    },
    onIterationStart: (nodeId, i) => log.push(`start ${nodeId}#${i}`),
    onIterationDone: (nodeId, i, items) => {
      log.push(`done ${nodeId}#${i}`);
      const list = done.get(nodeId) ?? [];
      list[i] = items;
      done.set(nodeId, list);
    },
  };
  return { hooks, log, done };
}

const texts = (items: Item[] | undefined) =>
  (items ?? []).map((item) =>
    item.status === 'failed' ? `failed: ${item.error?.message}` : itemText(item),
  );

/** A deferred promise, to hold an I/O node open until the test lets it finish. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('engine (workflows/engine.ts, fake EngineHooks)', () => {
  it('runs a pure graph: the input reaches the template and the result', async () => {
    const { hooks, log } = fakeHooks(async () => assert.fail('no I/O node in this graph'));
    const out = (await executeGraph(example('hello'), { name: 'Ada' }, hooks)) as Map<
      string,
      Item[]
    >;
    assert.deepEqual(texts(out.get('greeting')), ['Hello, Ada!']);
    assert.deepEqual([...log].sort(), ['done greet#0', 'done greeting#0', 'done name#0']);
  });

  it('iterates an I/O node per row, in parallel, and keeps row order whatever order answers come in', async () => {
    const gates = [deferred<void>(), deferred<void>(), deferred<void>()];
    const started: number[] = [];
    const { hooks, log } = fakeHooks(async (node, i, ports) => {
      started.push(i);
      await gates[i].promise;
      return [completed({ type: 'text', text: `${node.id}(${itemText(ports.row)})` })];
    });
    const running = executeGraph(example('batch-summaries'), { rows: ['a', 'b', 'c'] }, hooks);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started.sort(), [0, 1, 2], 'all three rows started before any answered');
    for (const i of [2, 0, 1]) gates[i].resolve();
    const out = (await running) as Map<string, Item[]>;
    assert.deepEqual(texts(out.get('summaries')), ['summarize(a)', 'summarize(b)', 'summarize(c)']);
    assert.deepEqual(texts(out.get('all_result')), [
      'summarize(a)\n\nsummarize(b)\n\nsummarize(c)',
    ]);
    assert.deepEqual(log.filter((l) => l.startsWith('start')).sort(), [
      'start summarize#0',
      'start summarize#1',
      'start summarize#2',
    ]);
  });

  it('keeps a failed item in its place, and a node fed by it fails as upstream_failed', async () => {
    const { hooks } = fakeHooks(async (_node, i, ports) =>
      i === 1
        ? [failed({ message: 'provider said no', type: 'provider_error', code: 400 })]
        : [completed({ type: 'text', text: itemText(ports.row) })],
    );
    const out = (await executeGraph(
      example('batch-summaries'),
      { rows: ['a', 'b', 'c'] },
      hooks,
    )) as Map<string, Item[]>;
    const summaries = out.get('summaries')!;
    assert.deepEqual(
      summaries.map((s) => s.status),
      ['completed', 'failed', 'completed'],
    );
    assert.equal(summaries[1].error?.type, 'provider_error');
    const [all] = out.get('all_result')!;
    assert.equal(all.status, 'failed');
    assert.equal(all.error?.type, 'upstream_failed');
    assert.match(all.error!.message, /input item 1 from node 'summarize' failed: provider said no/);
  });

  it('starts independent branches at once', async () => {
    const graph = WorkflowDocumentSchema.parse({
      slug: 'two-branches',
      nodes: [
        { id: 'topic', type: 'user_input', label: 'Topic', input_type: 'text' },
        { id: 'left', type: 'llm', model: 'm', prompt: 'L {{topic}}' },
        { id: 'right', type: 'llm', model: 'm', prompt: 'R {{topic}}' },
        { id: 'l_out', type: 'user_result', label: 'Left' },
        { id: 'r_out', type: 'user_result', label: 'Right' },
      ],
      edges: [
        { from: 'topic', to: 'left', port: 'topic' },
        { from: 'topic', to: 'right', port: 'topic' },
        { from: 'left', to: 'l_out' },
        { from: 'right', to: 'r_out' },
      ],
    });
    const gate = deferred<void>();
    const started: string[] = [];
    const { hooks } = fakeHooks(async (node) => {
      started.push(node.id);
      await gate.promise;
      return [completed({ type: 'text', text: node.id })];
    });
    const running = executeGraph(graph, { topic: 'x' }, hooks);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started.sort(), ['left', 'right']);
    gate.resolve();
    const out = (await running) as Map<string, Item[]>;
    assert.deepEqual([texts(out.get('l_out')), texts(out.get('r_out'))], [['left'], ['right']]);
  });

  it('rejects with a NodeFailure naming the node when an I/O node cannot run', async () => {
    const { hooks } = fakeHooks(async (node) => {
      throw new NodeFailure(node.id, node.type, 'every attempt failed');
    });
    await assert.rejects(
      executeGraph(example('batch-summaries'), { rows: ['a'] }, hooks),
      (err: unknown) => {
        assert.ok(err instanceof NodeFailure);
        assert.equal(err.nodeId, 'summarize');
        assert.match(err.message, /node 'summarize' \(llm\): every attempt failed/);
        return true;
      },
    );
  });

  it('fails a node whose list inputs have unequal lengths', async () => {
    const graph = WorkflowDocumentSchema.parse({
      slug: 'unequal',
      nodes: [
        { id: 'a', type: 'user_input', label: 'A', input_type: 'json' },
        { id: 'b', type: 'user_input', label: 'B', input_type: 'json' },
        { id: 'ea', type: 'batch' },
        { id: 'eb', type: 'batch' },
        { id: 'pair', type: 'text', template: '{{x}} {{y}}' },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [
        { from: 'a', to: 'ea', port: 'rows' },
        { from: 'b', to: 'eb', port: 'rows' },
        { from: 'ea', to: 'pair', port: 'x' },
        { from: 'eb', to: 'pair', port: 'y' },
        { from: 'pair', to: 'out' },
      ],
    });
    const { hooks } = fakeHooks(async () => assert.fail('no I/O node'));
    await assert.rejects(
      executeGraph(graph, { a: [1, 2], b: [1, 2, 3] }, hooks),
      /node 'pair' \(text\): inputs have unequal lengths \(x: 2, y: 3\)/,
    );
    const ok = (await executeGraph(graph, { a: [1, 2], b: ['z'] }, hooks)) as Map<string, Item[]>;
    assert.deepEqual(
      texts(ok.get('out')),
      ['1 z', '2 z'],
      'a single item broadcasts to every iteration',
    );
  });

  it("hands a big node's stored list to join once every row of it is done, without its `ready`", async () => {
    const rowsDone = deferred<void>();
    const log: string[] = [];
    const stored: StoredListNodes = {
      select: async () => assert.fail('no select in this graph'),
      batch: async () => assert.fail('no batch of a stored list in this graph'),
      join: async (node, list, sourceId) => {
        log.push(`join ${node.id} of ${JSON.stringify(list)} from ${sourceId}`);
        return [completed({ type: 'text', text: 'joined' })];
      },
    };
    const { hooks } = fakeHooks(async () => assert.fail('the rows run in blocks'));
    const big: EngineHooks = {
      ...hooks,
      isBig: () => true,
      runStoredRows: (node, _ports, _sources, count) => {
        log.push(`blocks of ${node.id}`);
        const ready = async () => rowsDone.promise;
        return { list: { ref: node.id, count, ready }, done: rowsDone.promise };
      },
      pureNodesTakeStored: () => true,
      storedListReads: stored,
    };
    const run = executeGraph(example('batch-summaries'), { rows: ['a', 'b', 'c'] }, big);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log, ['blocks of summarize'], 'the join waits for the rows');
    rowsDone.resolve();
    const out = (await run) as Map<string, Item[]>;
    assert.deepEqual(log, [
      'blocks of summarize',
      'join all of {"ref":"summarize","count":3} from summarize',
    ]);
    assert.deepEqual(texts(out.get('all_result')), ['joined']);

    // A run started before stored lists reached list nodes (pureNodesTakeStored: false) fails the join.
    await assert.rejects(
      executeGraph(
        example('batch-summaries'),
        { rows: ['a'] },
        {
          ...big,
          pureNodesTakeStored: () => false,
        },
      ),
      /node 'all' \(join\): cannot take the 1 rows of node 'summarize', which are kept in the store/,
    );
  });

  it('runs a text node given a stored list in blocks, and refuses it in a run from before', async () => {
    const graph = WorkflowDocumentSchema.parse({
      slug: 'file-text',
      nodes: [
        { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'file' },
        { id: 'split', type: 'batch' },
        { id: 'say', type: 'text', template: 'Q: {{row}}' },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [
        { from: 'rows', to: 'split', port: 'rows' },
        { from: 'split', to: 'say', port: 'row' },
        { from: 'say', to: 'out' },
      ],
    });
    const blocks: string[] = [];
    const { hooks } = fakeHooks(async () => assert.fail('no I/O node'));
    const stored: EngineHooks = {
      ...hooks,
      fileRows: () => async () => ({ ref: 'split', count: 500 }),
      runStoredRows: (node, ports, _sources, count) => {
        blocks.push(`${node.id} of ${JSON.stringify(ports)}, ${count} rows`);
        return { list: { ref: node.id, count }, done: Promise.resolve() };
      },
      pureNodesTakeStored: () => true,
    };
    const out = await executeGraph(graph, {}, stored);
    assert.deepEqual(blocks, ['say of {"row":{"ref":"split","count":500}}, 500 rows']);
    assert.deepEqual(out.get('out'), { ref: 'say', count: 500 });
    await assert.rejects(
      executeGraph(graph, {}, { ...stored, pureNodesTakeStored: () => false }),
      /node 'say' \(text\): cannot take the 500 rows of node 'split', which are kept in the store/,
    );
  });
  it("hands a big node's stored list to a batch once it is done, whose rows go on stored; refused in a run from before", async () => {
    const graph = WorkflowDocumentSchema.parse({
      slug: 'llm-batch',
      nodes: [
        { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'json' },
        { id: 'split', type: 'batch' },
        { id: 'ask', type: 'llm', model: 'm', prompt: '{{row}}' },
        { id: 'again', type: 'batch' },
        { id: 'say', type: 'text', template: 'Q: {{row}}' },
        { id: 'out', type: 'user_result', label: 'Out' },
      ],
      edges: [
        { from: 'rows', to: 'split', port: 'rows' },
        { from: 'split', to: 'ask', port: 'row' },
        { from: 'ask', to: 'again', port: 'rows' },
        { from: 'again', to: 'say', port: 'row' },
        { from: 'say', to: 'out' },
      ],
    });
    const rowsDone = deferred<void>();
    const log: string[] = [];
    const { hooks } = fakeHooks(async () => assert.fail('the rows run in blocks'));
    const big: EngineHooks = {
      ...hooks,
      isBig: () => true,
      runStoredRows: (node, ports, _sources, count) => {
        log.push(`blocks of ${node.id} from ${node.id === 'ask' ? 'row' : JSON.stringify(ports)}`);
        const ready = async () => rowsDone.promise;
        return { list: { ref: node.id, count, ready }, done: rowsDone.promise };
      },
      pureNodesTakeStored: () => true,
      batchTakesStored: () => true,
      storedListReads: {
        select: async () => assert.fail('no select in this graph'),
        join: async () => assert.fail('no join in this graph'),
        batch: async (node, list) => {
          log.push(`batch ${node.id} of ${JSON.stringify(list)}`);
          return { ref: node.id, count: 7 };
        },
      },
    };
    const run = executeGraph(graph, { rows: ['a', 'b', 'c'] }, big);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log, ['blocks of ask from row'], 'the batch waits for the rows');
    rowsDone.resolve();
    const out = await run;
    assert.deepEqual(log, [
      'blocks of ask from row',
      'batch again of {"ref":"ask","count":3}',
      'blocks of say from {"row":{"ref":"again","count":7}}',
    ]);
    const { ref, count } = out.get('out') as ItemRef;
    assert.deepEqual({ ref, count }, { ref: 'say', count: 7 });

    // A run started before a batch could take a stored list (batchTakesStored: false) fails it.
    await assert.rejects(
      executeGraph(graph, { rows: ['a'] }, { ...big, batchTakesStored: () => false }),
      /node 'again' \(batch\): cannot take the 1 rows of node 'ask', which are kept in the store/,
    );
  });
});
