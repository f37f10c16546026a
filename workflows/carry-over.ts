/**
 * D38: what a re-run of failed items carries over from its parent run, inside the workflow.
 *
 * An I/O node's row is carried (reported done with the parent's item, not run, not billed) when
 * the parent completed it and the node is "carriable": the parent's items of the node are known
 * (a big node's stored pages, D35, or a small node's items as the parent's output), and every
 * input of the node is what the parent's was. Inputs are the parent's when they come from
 * user inputs, `batch`/`text` over such inputs, or carriable I/O nodes: a row the parent
 * completed had completed inputs, and those are carried too. A `select`/`join` over any I/O node
 * may change (some rows run again), so everything downstream of it runs again, and so does a
 * small I/O node whose items the parent kept only in its history (not an output): all its rows
 * run, and what depends on it. Pure; the activity that reads the parent is activities/carry-over.ts.
 */
import type { GraphNode, WorkflowDocument } from '../domain/graph';
import type { Item } from '../domain/parts';
import { normalizeLabel } from '../domain/labels';
import type { ActivityInterfaceFor } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { IoNode, NodeRow } from '../activities/types';
import type { RunArgs } from './definitions';
import { isPatched } from './patches';
import type { RowProgress } from './engine';
import type { RunFinal } from '../domain/run';
import { FAILED_ROWS_MAX, PAGE_ROWS, type StoredOutput } from '../domain/item-blocks';

const IO_TYPES = new Set(['llm', 'http_request', 'image_generation', 'model']);
/** Blocks of a carried big node in flight at once (see CarryOver.lanes). */
const CARRIED_LANES = 16;
/** The most pages of one block of a carried node whose failed rows are known (see CarryOver.plan). */
const CARRIED_BLOCK_PAGES = 100;
/** Patch `rerun-one-block`: the most rows of a carried node run as one block (see CarryOver.onePlan). */
const ONE_BLOCK_ROWS = 100_000;

/** Asks the `loadCarryOver` activity what the parent holds, and builds the run's carry-over from it. */
export async function loadCarry(
  args: RunArgs,
  parentRunId: string,
  persistence: Pick<ActivityInterfaceFor<Activities>, 'loadCarryOver'>,
): Promise<CarryOver> {
  const source = await persistence.loadCarryOver.executeWithOptions(
    { summary: 'load re-run carry-over' },
    [
      {
        runId: args.runId,
        accountId: args.accountId,
        parentRunId,
        ioNodes: args.graph.nodes.filter((n) => IO_TYPES.has(n.type)).map((n) => n.id),
        feeders: inlineFeeders(args.graph, () => isPatched('rerun-list-rows')),
      },
    ],
  );
  return new CarryOver(args.graph, source, parentRunId);
}

/** What the parent holds: nodes with stored pages, and a small node's completed items by row. */
export interface CarrySource {
  stored: string[];
  inline: Record<string, Array<[number, Item]>>;
  /** A stored node's rows the parent did not complete, when its record lists them (see `CarryOver.plan`). */
  failed?: Record<string, { count: number; rows: number[] }>;
}

/**
 * The I/O nodes whose items the parent's record keeps as an output (normalized label), one item
 * per row. `listsApart`: whether an `llm` of `output: "list"` (several items a row, so an item's
 * index is no row) is left out, asked only when one feeds a result (patch `rerun-list-rows`;
 * before, its items were carried into the wrong rows).
 */
export function inlineFeeders(
  graph: WorkflowDocument,
  listsApart: () => boolean = () => true,
): Record<string, string> {
  const nodes = new Map(graph.nodes.map((node) => [node.id, node]));
  const out: Record<string, string> = {};
  for (const edge of graph.edges) {
    const to = nodes.get(edge.to);
    const from = nodes.get(edge.from);
    if (to?.type !== 'user_result' || !from || !oneItemPerRow(from)) continue;
    if (from.type === 'llm' && from.output === 'list' && listsApart()) continue;
    out[from.id] = normalizeLabel(to.label);
  }
  return out;
}

/** Nodes whose rows each give one output item, so an output item's index is its row (but see `listsApart`). */
function oneItemPerRow(node: GraphNode): boolean {
  if (node.type === 'llm' || node.type === 'http_request') return true;
  return node.type === 'image_generation' && (node.n ?? 1) === 1;
}

/** The I/O nodes whose completed parent rows may be carried over (see the header). */
export function carriableNodes(graph: WorkflowDocument, source: CarrySource): Set<string> {
  const known = new Set([...source.stored, ...Object.keys(source.inline)]);
  const nodes = new Map(graph.nodes.map((node) => [node.id, node]));
  const inputsOf = new Map<string, string[]>();
  for (const edge of graph.edges)
    inputsOf.set(edge.to, [...(inputsOf.get(edge.to) ?? []), edge.from]);
  const clean = new Map<string, boolean>();
  const ioUpstream = new Map<string, boolean>();
  const hasIoUpstream = (id: string): boolean => {
    if (!ioUpstream.has(id)) {
      ioUpstream.set(id, false); // a graph is acyclic; this only guards recursion
      ioUpstream.set(
        id,
        (inputsOf.get(id) ?? []).some(
          (from) => IO_TYPES.has(nodes.get(from)!.type) || hasIoUpstream(from),
        ),
      );
    }
    return ioUpstream.get(id)!;
  };
  const isClean = (id: string): boolean => {
    if (!clean.has(id)) {
      clean.set(id, false);
      const node = nodes.get(id)!;
      const inputs = (inputsOf.get(id) ?? []).every(isClean);
      let value: boolean;
      if (node.type === 'select' || node.type === 'join') value = inputs && !hasIoUpstream(id);
      else if (IO_TYPES.has(node.type)) value = inputs && known.has(id);
      else value = inputs;
      clean.set(id, value);
    }
    return clean.get(id)!;
  };
  return new Set(graph.nodes.filter((n) => IO_TYPES.has(n.type) && isClean(n.id)).map((n) => n.id));
}

/** The carry-over of one re-run, as the workflow uses it. */
export class CarryOver {
  private readonly carriable: Set<string>;
  private readonly inline: Map<string, Map<number, Item>>;
  private readonly failed: NonNullable<CarrySource['failed']>;

  constructor(
    graph: WorkflowDocument,
    source: CarrySource,
    readonly parentRunId: string,
  ) {
    this.carriable = carriableNodes(graph, source);
    this.inline = new Map(
      Object.entries(source.inline).map(([node, rows]) => [node, new Map(rows)]),
    );
    this.failed = source.failed ?? {};
  }

  /**
   * The blocks of a carried big node whose parent's failed rows are known (its record lists them),
   * each with the rows it runs; undefined otherwise (the blocks then read the parent's pages).
   * Blocks span whole pages and split the failed rows evenly over CARRIED_LANES, so all lanes
   * call the provider at once; a block holds at most CARRIED_BLOCK_PAGES pages, so the pages of
   * carried rows alone are written in a few large inserts.
   */
  plan(nodeId: string, count: number): BlockPlan[] | undefined {
    const rows = this.knownFailed(nodeId, count);
    return rows && planBlocks(count, rows, CARRIED_LANES);
  }

  /**
   * Patch `rerun-one-block`: a carried big node of at most ONE_BLOCK_ROWS rows whose failed rows
   * are known runs them in one block, at the run's whole concurrency, its lanes sharing one queue.
   * With 16 blocks of 4 lanes each (`plan`), blocks that started late or met slower calls ended up
   * to 0.7 s after the first ones while those blocks' lanes idled, and every block's start and end
   * cost an activity task and a workflow task. Undefined when not known or bigger (then `plan`).
   */
  onePlan(nodeId: string, count: number): BlockPlan[] | undefined {
    const rows = this.knownFailed(nodeId, count);
    if (!rows || count > ONE_BLOCK_ROWS) return undefined;
    return [{ first: 0, count, run: rows }];
  }

  private knownFailed(nodeId: string, count: number): number[] | undefined {
    const known = this.failed[nodeId];
    if (!this.carriable.has(nodeId) || !known || known.count !== count) return undefined;
    return known.rows;
  }

  /** A big node's blocks take the parent's completed rows from its stored pages (activities/node-block.ts). */
  blockSource(nodeId: string): { carryFrom?: string } {
    return this.carriable.has(nodeId) ? { carryFrom: this.parentRunId } : {};
  }

  /**
   * Lanes of a big node's blocks (run-workflow.ts `runStoredRows`; 2 for other runs): a carried
   * node's block runs only the rows its parent did not complete, so sixteen blocks share the run's
   * slots at a time and the store reads and writes of the carried pages overlap.
   */
  lanes(nodeId: string): number | undefined {
    return this.carriable.has(nodeId) ? CARRIED_LANES : undefined;
  }

  /** A small node's rows the parent completed are reported done at once; the others run. */
  wrap(
    runIoRows: (node: IoNode, rows: NodeRow[], progress: RowProgress) => Promise<void>,
  ): (node: IoNode, rows: NodeRow[], progress: RowProgress) => Promise<void> {
    return async (node, rows, progress) => {
      const items = this.carriable.has(node.id) ? this.inline.get(node.id) : undefined;
      if (!items) return runIoRows(node, rows, progress);
      const rest: NodeRow[] = [];
      for (const row of rows) {
        const item = items.get(row.index);
        if (!item) {
          rest.push(row);
          continue;
        }
        progress.started(row.index);
        progress.done(row.index, [item]);
      }
      if (rest.length > 0) await runIoRows(node, rest, progress);
    };
  }
}

/** One block of a big node: rows [first, first + count), of which `run` only run (absent: all that are not stored). */
export interface BlockPlan {
  first: number;
  count: number;
  run?: number[];
}

/** D38: blocks over whole pages of `count` rows, each with about 1/lanes of the `failed` rows (ascending). */
export function planBlocks(count: number, failed: number[], lanes: number): BlockPlan[] {
  const perBlock = Math.max(1, Math.ceil(failed.length / lanes));
  const pages = Math.ceil(count / PAGE_ROWS);
  const blocks: BlockPlan[] = [];
  let next = 0; // the next failed row to place
  let first = 0;
  let run: number[] = [];
  for (let page = 0; page < pages; page++) {
    const end = Math.min(count, (page + 1) * PAGE_ROWS);
    while (next < failed.length && failed[next] < end) run.push(failed[next++]);
    const full = run.length >= perBlock || end - first >= CARRIED_BLOCK_PAGES * PAGE_ROWS;
    if (full || end === count) {
      blocks.push({ first, count: end - first, run });
      first = end;
      run = [];
    }
  }
  return blocks;
}

/**
 * D38: the rows of each big node that did not complete, from its blocks' answers, for the record
 * of a completed run (`StoredOutput.failed`): a re-run of it then runs just these. A node is not
 * listed when a block did not say (more than FAILED_ROWS_PER_BLOCK, an answer recorded before) or
 * when it has more than FAILED_ROWS_MAX.
 */
export class FailedRows {
  private readonly rows = new Map<string, number[] | null>();

  note(nodeId: string, failed: number[] | undefined): void {
    const list = this.rows.get(nodeId);
    if (list === null) return;
    if (!failed) this.rows.set(nodeId, null);
    else if ((list?.length ?? 0) + failed.length > FAILED_ROWS_MAX) this.rows.set(nodeId, null);
    else this.rows.set(nodeId, [...(list ?? []), ...failed]);
  }

  /** `final` with each stored output's failed rows, when the run completed and they are known. */
  attach(final: RunFinal): RunFinal {
    if (final.status !== 'completed' || !final.storedOutputs) return final;
    const storedOutputs: Record<string, StoredOutput> = {};
    for (const [label, output] of Object.entries(final.storedOutputs)) {
      const rows = this.rows.get(output.node);
      storedOutputs[label] = rows ? { ...output, failed: [...rows].sort((a, b) => a - b) } : output;
    }
    return { ...final, storedOutputs };
  }
}
