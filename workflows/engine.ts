/**
 * Executes a published graph inside the workflow: every node starts as soon as its inputs are
 * ready (independent branches run in parallel), item nodes iterate over their inputs
 * (docs/workflow-format.md "Values and iteration"), and failed items keep their place.
 */
import type { BlockNode, IoNode, NodeRow, PortSource } from '../activities/types';
import {
  boundedTextItem,
  INLINE_ROW_MAX_BYTES,
  isItemRef,
  RUN_TEXT_MAX_CHARS,
  RUN_TEXT_MAX_LOOKUPS,
  RUN_TEXT_MAX_TEMPLATE_CHARS,
  runTextWorkSpent,
  type ItemRef,
} from '../domain/item-blocks';
import type { GraphEdge, GraphNode, WorkflowDocument } from '../domain/graph';
import type { Item } from '../domain/parts';
import { normalizeLabel } from '../domain/labels';
import { NodeFailure } from './errors';
import { joinItems } from '../domain/join-items';
import { filledPlaceholders } from '../domain/templates';
import { BatchWork, batchItems, selectedIndex, selectItems, userInputItems } from './pure-nodes';
import { textItem, upstreamFailed } from '../domain/items';
import { inlineReadsSpent, RUN_INLINE_MAX_READS } from '../domain/run-size';

/** Where an I/O node's rows report back: as each starts doing work, and with its items when done. */
export interface RowProgress {
  started(index: number): void;
  done(index: number, items: Item[]): void;
}

/** What a node produces: its items, or (D35) a reference to items kept in the store. */
export type NodeValue = Item[] | ItemRef;

/** What the engine needs from the workflow around it. */
export interface EngineHooks {
  /** D35: whether an I/O node of this many rows keeps its items in the store (run in blocks). */
  isBig?(count: number): boolean;
  /**
   * D35: starts a big I/O node in blocks whose items go to the store. Its stored list is handed
   * on at once, so the next node of a chain starts each block as soon as the rows it reads are
   * done (`ItemRef.ready`, per-row pipelining); `done` settles when every block has.
   */
  runStoredRows?(
    node: BlockNode,
    ports: Record<string, PortSource>,
    sources: Record<string, string>,
    count: number,
  ): { list: ItemRef; done: Promise<void> };
  /** D31/D35: the loader of a list node's rows from a file, when its rows come from one. */
  fileRows?(nodeId: string): (() => Promise<ItemRef>) | undefined;
  /** A list node produced a stored list (its items are all done). */
  onStoredList?(nodeId: string, list: ItemRef): void;
  /**
   * D35: whether `text`, `select` and `join` take a stored list, asked only when one meets such a
   * node; false (or absent) for a run started before they could, where the node fails as it did.
   */
  pureNodesTakeStored?(): boolean;
  /** D35: whether `batch` takes a stored list, asked only when one meets a batch (as above). */
  batchTakesStored?(): boolean;
  /**
   * Whether a `text` node's item in the run is bounded (1 MiB, RUN_TEXT_MAX_CHARS for the run),
   * asked only when one would pass a bound; false for a run that filled it before the bound.
   */
  boundsText?(): boolean;
  /**
   * Whether the run's `text` nodes fill at most RUN_TEXT_MAX_LOOKUPS placeholders (from
   * RUN_TEXT_MAX_TEMPLATE_CHARS of templates) and an inline
   * `join` at most INLINE_ROW_MAX_BYTES, asked only when one would pass (patch `text-work-bound`).
   */
  boundsTextWork?(): boolean;
  /**
   * Whether what the run makes in its workflow is bounded in all (domain/run-size.ts
   * RUN_INLINE_MAX_ROWS and the rest), asked only when past a bound (patch `run-items-bound`).
   */
  boundsRunItems?(): boolean;
  /**
   * Whether the items of inline lists the run's nodes read are bounded in all (domain/run-size.ts
   * RUN_INLINE_MAX_READS), asked only when past it (patch `inline-reads-bound`).
   */
  boundsInlineReads?(): boolean;
  /** D35: whether a `text` node of a big list fills it in blocks, asked only when one meets one (as above). */
  bigTextInBlocks?(): boolean;
  /** D35: `select`, `join` and `batch` of a stored list, read by an activity once the list is done. */
  storedListReads?: StoredListNodes;
  /**
   * Runs the given iterations of an I/O node (as activities, in whatever grouping suits), reporting
   * every row through `progress`; resolves when each row has reported done.
   */
  runIoRows(node: IoNode, rows: NodeRow[], progress: RowProgress): Promise<void>;
  /** An iteration of a node began doing work (only I/O nodes report this). */
  onIterationStart(nodeId: string, iteration: number): void;
  /** An iteration of a node produced its items; list and pure nodes report all items as iteration 0. */
  onIterationDone(nodeId: string, iteration: number, items: Item[]): void;
  /** A node has produced all its items (D33 progress). */
  onNodeDone?(nodeId: string): void;
}

/** How `select`, `join` and `batch` take a stored list (D35): an activity reads what they need from the store. */
export interface StoredListNodes {
  /** The item at row `at` of the done list. */
  select(node: Extract<GraphNode, { type: 'select' }>, list: ItemRef, at: number): Promise<Item[]>;
  /** The join's one item, read row by row from the done list; a large one stays stored (a list of one row). */
  join(
    node: Extract<GraphNode, { type: 'join' }>,
    list: ItemRef,
    sourceId: string,
  ): Promise<Item[] | ItemRef>;
  /** The batch's rows, read item by item from the done list and stored as the batch's own list. */
  batch(node: Extract<GraphNode, { type: 'batch' }>, list: ItemRef): Promise<ItemRef>;
}

const IO_TYPES = new Set(['llm', 'http_request', 'image_generation', 'model']);

/** True for nodes that run as activities. */
export function isIoNode(node: GraphNode): node is IoNode {
  return IO_TYPES.has(node.type);
}

/** Runs the whole graph; resolves with every node's items, rejects with a NodeFailure when a node cannot run. */
export async function executeGraph(
  graph: WorkflowDocument,
  inputs: Record<string, unknown>,
  hooks: EngineHooks,
): Promise<Map<string, NodeValue>> {
  const nodes = new Map(graph.nodes.map((node) => [node.id, node]));
  const incoming = edgesInto(graph);
  const results = new Map<string, Promise<NodeValue>>();
  const fillText = textFiller(hooks);
  const batchWork = new BatchWork(() => hooks.boundsRunItems?.() ?? false);
  const takeReads = inlineReads(hooks);
  /** Nodes whose value was handed on before they finished (D35 pipelining): awaited at the end. */
  const streaming: Promise<void>[] = [];

  const evaluate = (id: string): Promise<NodeValue> => {
    let result = results.get(id);
    if (!result) {
      result = run(nodes.get(id)!);
      results.set(id, result);
    }
    return result;
  };

  async function run(node: GraphNode): Promise<NodeValue> {
    const edges = incoming.get(node.id) ?? [];
    const ports: Record<string, NodeValue> = {};
    const sources: Record<string, string> = {};
    await Promise.all(
      edges.map(async (edge) => {
        const port = edge.port ?? 'in';
        ports[port] = await evaluate(edge.from);
        sources[port] = edge.from;
      }),
    );
    takeReads(node, ports);
    const items = await runNode(node, ports, sources);
    if (runsInBlocks(node) && isItemRef(items) && items.ready) return items; // streamed: done when its blocks are
    if (isItemRef(items)) {
      if (!isIoNode(node) && node.type !== 'user_result') hooks.onStoredList?.(node.id, items);
    } else if (!isIoNode(node) && node.type !== 'text') hooks.onIterationDone(node.id, 0, items);
    hooks.onNodeDone?.(node.id);
    return items;
  }

  async function runNode(
    node: GraphNode,
    ports: Record<string, NodeValue>,
    sources: Record<string, string>,
  ): Promise<NodeValue> {
    switch (node.type) {
      case 'user_input':
        return userInputItems(node, inputs[normalizeLabel(node.label)]);
      case 'user_result':
        return ports.in ?? [];
      case 'batch':
        return runBatch(node, ports, hooks, batchWork);
      case 'select':
      case 'join':
        return runListNode(node, ports, sources, hooks);
      case 'text':
        // D35: a text node given a stored list, or a big one, fills its template in blocks, as an
        // I/O node runs, so its items stay out of the run and its history.
        if (
          hooks.runStoredRows &&
          (Object.values(ports).some(isItemRef)
            ? hooks.pureNodesTakeStored?.()
            : hooks.isBig?.(lengthOf(node, ports)) && hooks.bigTextInBlocks?.())
        )
          return runInBlocks(node, ports, sources, hooks, streaming);
        return iterate(node, inline(node, ports), sources, hooks, async (rows, report) => {
          for (const row of rows) report(row.index, [fillText(node, row.ports)]);
        });
      default:
        return runIoNode(node, ports, sources, hooks, streaming);
    }
  }

  await Promise.all(graph.nodes.map((node) => evaluate(node.id)));
  await Promise.all(streaming);
  const out = new Map<string, NodeValue>();
  for (const [id, promise] of results) out.set(id, await promise);
  return out;
}

/**
 * An I/O node: a big one (or one fed a stored list) in blocks whose items go to the store, its
 * unfinished blocks joining `streaming`; any other as iterations of its inline items.
 */
function runIoNode(
  node: IoNode,
  ports: Record<string, NodeValue>,
  sources: Record<string, string>,
  hooks: EngineHooks,
  streaming: Promise<void>[],
): NodeValue | Promise<NodeValue> {
  if (
    hooks.runStoredRows &&
    (Object.values(ports).some(isItemRef) || hooks.isBig?.(lengthOf(node, ports)))
  )
    return runInBlocks(node, ports, sources, hooks, streaming);
  return iterate(node, inline(node, ports), sources, hooks, (rows, report) =>
    hooks.runIoRows(node, rows, {
      started: (i) => hooks.onIterationStart(node.id, i),
      done: report,
    }),
  );
}

/** True for the nodes whose stored list is handed on while their blocks run (D35 pipelining). */
function runsInBlocks(node: GraphNode): node is BlockNode {
  return isIoNode(node) || node.type === 'text';
}

/** D35: a node in blocks whose items go to the store; its stored list is handed on at once, its blocks join `streaming`. */
function runInBlocks(
  node: BlockNode,
  ports: Record<string, NodeValue>,
  sources: Record<string, string>,
  hooks: EngineHooks,
  streaming: Promise<void>[],
): ItemRef {
  const { list, done } = hooks.runStoredRows!(
    node,
    portSources(ports),
    sources,
    lengthOf(node, ports),
  );
  const finished = done.then(() => hooks.onNodeDone?.(node.id));
  finished.catch(() => undefined); // awaited by executeGraph; not an unhandled rejection meanwhile
  streaming.push(finished);
  return list; // as is, not wrapped: runNode resolves in the same microtask as before the split
}

/**
 * `batch`: of a file's rows (D31) or a stored list (D35) by an activity that stores its rows; of
 * inline items in workflow code, at once (as list nodes below).
 */
function runBatch(
  node: Extract<GraphNode, { type: 'batch' }>,
  ports: Record<string, NodeValue>,
  hooks: EngineHooks,
  work: BatchWork,
): Item[] | Promise<ItemRef> {
  const fromFile = hooks.fileRows?.(node.id);
  if (fromFile) return fromFile();
  const stored = storedInput(ports.rows, hooks, hooks.batchTakesStored);
  if (stored) return stored.done().then((list) => stored.nodes.batch(node, list));
  return batchItems(node, inline(node, ports).rows, work);
}

/**
 * `select` and `join`: of an inline list in workflow code (at once, not in a later microtask: the
 * order of every run's commands depends on it), of a stored list (D35) by an activity.
 */
function runListNode(
  node: Extract<GraphNode, { type: 'select' | 'join' }>,
  ports: Record<string, NodeValue>,
  sources: Record<string, string>,
  hooks: EngineHooks,
): Item[] | Promise<Item[] | ItemRef> {
  const stored = storedInput(ports.in, hooks, hooks.pureNodesTakeStored);
  if (!stored) {
    const items = inline(node, ports).in ?? [];
    return node.type === 'select'
      ? selectItems(node, items)
      : joinItems(node, items, sources.in, hooks.boundsTextWork);
  }
  if (node.type === 'join')
    return stored.done().then((list) => stored.nodes.join(node, list, sources.in));
  const at = selectedIndex(node, stored.count); // out of range: fails before any read
  return stored.done().then((list) => stored.nodes.select(node, list, at));
}

/**
 * A stored list on a list node's port, with what reads it, once the list is done; else undefined
 * (also in a run started before the node could take one: `takes`, its patch, asked only here).
 */
function storedInput(
  value: NodeValue | undefined,
  hooks: EngineHooks,
  takes: (() => boolean) | undefined,
) {
  const nodes = hooks.storedListReads;
  if (!isItemRef(value) || !nodes || !takes?.()) return undefined;
  const done = async (): Promise<ItemRef> => {
    await value.ready?.(0, value.count);
    return { ref: value.ref, count: value.count }; // an activity's input: without `ready`
  };
  return { nodes, count: value.count, done };
}

/** The ports as item lists; a stored list (D35) reaches only I/O, `text`, `select`, `join` and result nodes. */
function inline(node: GraphNode, ports: Record<string, NodeValue>): Record<string, Item[]> {
  const out: Record<string, Item[]> = {};
  for (const [name, value] of Object.entries(ports)) {
    if (isItemRef(value))
      throw new NodeFailure(
        node.id,
        node.type,
        `cannot take the ${value.count} rows of node '${value.ref}', which are kept in the store (a file's rows, or a node of more rows than twice the run's concurrency); only llm, http_request, image_generation, model, text, select, join and user_result nodes can`,
      );
    out[name] = value;
  }
  return out;
}

/** Iterations of a node: the length its port lists agree on (single items broadcast); unequal lengths fail it. */
function lengthOf(node: GraphNode, ports: Record<string, NodeValue>): number {
  const names = Object.keys(ports);
  const len = (p: string) => {
    const v = ports[p];
    return isItemRef(v) ? v.count : v.length;
  };
  const lengths = [...new Set(names.map(len).filter((n) => n !== 1))];
  if (lengths.length > 1) {
    const detail = names.map((p) => `${p}: ${len(p)}`).join(', ');
    throw new NodeFailure(node.id, node.type, `inputs have unequal lengths (${detail})`);
  }
  return lengths[0] ?? 1;
}

/** Where each port of a big node takes its items from (D35). */
function portSources(ports: Record<string, NodeValue>): Record<string, PortSource> {
  const out: Record<string, PortSource> = {};
  for (const [name, value] of Object.entries(ports)) {
    if (isItemRef(value)) out[name] = value;
    else if (value.length === 1) out[name] = { item: value[0] };
    else out[name] = { items: value };
  }
  return out;
}

/** Runs the rows whose inputs are all intact, calling `report` once per row with its items. */
type RowRunner = (rows: NodeRow[], report: (index: number, items: Item[]) => void) => Promise<void>;

/**
 * Zips the port lists by index (single items broadcast to every iteration, unequal lengths
 * fail the node) and runs the iterations; a failed input item short-circuits to a failed item.
 * Items come back in iteration order whatever order the rows finish in.
 */
async function iterate(
  node: GraphNode,
  ports: Record<string, Item[]>,
  sources: Record<string, string>,
  hooks: EngineHooks,
  runRows: RowRunner,
): Promise<Item[]> {
  const names = Object.keys(ports);
  const lengths = [...new Set(names.map((p) => ports[p].length).filter((n) => n !== 1))];
  if (lengths.length > 1) {
    const detail = names.map((p) => `${p}: ${ports[p].length}`).join(', ');
    throw new NodeFailure(node.id, node.type, `inputs have unequal lengths (${detail})`);
  }
  const count = lengths[0] ?? 1;
  const perIteration: Item[][] = new Array(count);
  const report = (index: number, items: Item[]): void => {
    if (perIteration[index]) return; // a row reported twice (a retried chunk) keeps its first items
    perIteration[index] = items;
    hooks.onIterationDone(node.id, index, items);
  };
  const runnable: NodeRow[] = [];
  for (let i = 0; i < count; i++) {
    const row: Record<string, Item> = {};
    for (const p of names) row[p] = ports[p].length === 1 ? ports[p][0] : ports[p][i];
    const broken = names.find((p) => row[p].status === 'failed');
    if (broken === undefined) {
      runnable.push({ index: i, ports: row });
    } else {
      const index = ports[broken].length === 1 ? 0 : i;
      report(i, [
        upstreamFailed(
          `input '${broken}' item ${index} from node '${sources[broken]}'`,
          row[broken].error?.message,
        ),
      ]);
    }
  }
  if (runnable.length > 0) await runRows(runnable, report);
  const missing = runnable.find((row) => !perIteration[row.index]);
  if (missing)
    throw new NodeFailure(node.id, node.type, `iteration ${missing.index} produced no result`);
  return perIteration.flat();
}

/** Each node's incoming edges, in the graph's order. */
function edgesInto(graph: WorkflowDocument): Map<string, GraphEdge[]> {
  const incoming = new Map<string, GraphEdge[]>();
  for (const edge of graph.edges) {
    const list = incoming.get(edge.to) ?? [];
    list.push(edge);
    incoming.set(edge.to, list);
  }
  return incoming;
}

/**
 * D31: the items of inline lists the run's nodes read, in all (RUN_INLINE_MAX_READS; patch
 * `inline-reads-bound`, asked only past it): a node reads every item of an inline list it takes (a
 * select only the one it picks, a result none: its items are bounded where it holds them), so the
 * node fails before it reads past the bound.
 */
function inlineReads(
  hooks: EngineHooks,
): (node: GraphNode, ports: Record<string, NodeValue>) => void {
  let readsLeft = RUN_INLINE_MAX_READS;
  return (node, ports) => {
    if (node.type === 'select' || node.type === 'user_result') return;
    let reads = 0;
    for (const value of Object.values(ports))
      if (!isItemRef(value) && value.length > 1) reads += value.length;
    readsLeft -= reads;
    if (readsLeft < 0 && hooks.boundsInlineReads?.())
      throw new NodeFailure(node.id, node.type, inlineReadsSpent(reads));
  };
}

/** The characters of a text node's one text part. */
function textLength(item: Item): number {
  const [part] = item.parts;
  return part?.type === 'text' ? part.text.length : 0;
}

/**
 * Fills a `text` node's item in the run itself, bounded (1 MiB an item, RUN_TEXT_MAX_CHARS for the
 * run's text nodes in all; D35 keeps a big list's in the store): past a bound the item fails in place.
 */
function textFiller(
  hooks: EngineHooks,
): (node: { template: string }, ports: Record<string, Item>) => Item {
  let textLeft = RUN_TEXT_MAX_CHARS;
  let lookupsLeft = RUN_TEXT_MAX_LOOKUPS;
  let templateLeft = RUN_TEXT_MAX_TEMPLATE_CHARS;
  return (node, ports) => {
    lookupsLeft -= filledPlaceholders(node.template);
    templateLeft -= node.template.length;
    // Past the run's work the item fails unfilled (patch `text-work-bound`, asked only then).
    if ((lookupsLeft < 0 || templateLeft < 0) && hooks.boundsTextWork?.())
      return runTextWorkSpent();
    // Never built past what the run's text may still hold: the same outcome as building it and
    // finding it over, without the work (`text-bounds` runs fail such an item either way).
    let item = boundedTextItem(node, ports, INLINE_ROW_MAX_BYTES, textLeft);
    // A run that filled it before the bound (a replay) fills it again as it did.
    if (item.status === 'failed' && !hooks.boundsText?.()) item = textItem(node, ports);
    if (item.status === 'completed') textLeft -= textLength(item);
    return item;
  };
}
