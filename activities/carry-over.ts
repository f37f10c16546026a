/**
 * D38: reading what a re-run of failed items carries over from its parent run. The API checked
 * that the parent is the caller's and finished; this side checks the account again (the
 * parent's id is a reference in the re-run's arguments) and treats a parent deleted meanwhile
 * (D39) as one with nothing to carry: every row then runs. Nothing here bills.
 */
import type { Item } from '../domain/parts';
import { PAGE_ROWS, pagesOf, type StoredRow } from '../domain/item-blocks';
import type { Collections } from '../store/db';
import { hasFirstPage, readPage } from '../store/item-blocks';
import { findRunWithoutLog } from '../store/runs';
import type { RunDoc } from '../store/documents';
import type { CarrySource } from '../workflows/carry-over';

type C = Pick<Collections, 'runs' | 'runChunks' | 'itemBlocks'>;

export interface LoadCarryOverRequest {
  runId: string;
  accountId: string;
  parentRunId: string;
  /** The run's I/O nodes: which of them the parent stored in pages (D35). */
  ioNodes: string[];
  /** I/O nodes whose items are a result of the parent (node id → normalized result label). */
  feeders: Record<string, string>;
}

/** Builds the activity that tells the workflow what the parent holds (small nodes' items come in its answer). */
export function createLoadCarryOverActivity(collections: C) {
  return async function loadCarryOver(req: LoadCarryOverRequest): Promise<CarrySource> {
    // The record alone, its chunks not joined: an output kept in chunks (a big inline list) is not
    // an AI node's (those are at most 2 × concurrency rows; bigger ones are stored pages).
    const parent = await findRunWithoutLog(collections, req.parentRunId, { inputs: false });
    if (!parent || parent.account_id !== req.accountId || !parent.finalized)
      return { stored: [], inline: {} };
    // A big node's first page exists once the parent finished any row of it; by `_id`, one round trip each.
    const probes = await Promise.all(
      req.ioNodes.map((node) => hasFirstPage(collections, parent._id, node)),
    );
    const stored = req.ioNodes.filter((_, i) => probes[i]);
    const inline: CarrySource['inline'] = {};
    const storedLabels = new Set(Object.keys(parent.stored_outputs ?? {}));
    // A parent that did not complete kept its items at their rows only since `itemsAtRows`
    // (before, they were numbered from 0, so an item's index was not its row): such a parent's
    // small nodes run again whole rather than carry an item into another row.
    const atRows = parent.status === 'completed' || parent.items_at_rows === true;
    for (const [node, label] of Object.entries(req.feeders)) {
      if (stored.includes(node) || storedLabels.has(label)) continue;
      const items = parent.chunks || !atRows ? undefined : parent.output?.[label];
      if (!items) continue; // unknown: the node runs again whole, and what follows it
      inline[node] = items
        .filter((item) => item.status === 'completed')
        .map((item): [number, Item] => [
          item.item_index,
          { status: 'completed', parts: item.parts },
        ]);
    }
    const failed = await knownFailures(collections, parent, stored);
    return { stored, inline, ...(failed ? { failed } : {}) };
  };
}

/**
 * D38: the rows of each stored node the parent did not complete, as its record lists them
 * (`StoredOutput.failed`), when it completed and the re-runs it carries rows from by reference are
 * all still there: a re-run then runs these rows and carries the others without reading pages.
 * Undefined when not known: the blocks read the parent's pages instead (`fillCarried`).
 */
async function knownFailures(
  c: C,
  parent: RunDoc,
  stored: string[],
): Promise<CarrySource['failed'] | undefined> {
  if (parent.status !== 'completed') return undefined;
  const failed: NonNullable<CarrySource['failed']> = {};
  for (const output of Object.values(parent.stored_outputs ?? {}))
    if (output.failed && stored.includes(output.node))
      failed[output.node] = { count: output.count, rows: output.failed };
  if (Object.keys(failed).length === 0) return undefined;
  // The parent's carried rows read through its own parents' pages (D39 may have deleted one).
  let run = parent;
  while (run.rerun_items === 'failed' && run.parent_run_id) {
    if (run.parent_run_id === parent.inputs_from) break; // checked as this re-run started
    const up = await findRunWithoutLog(c, run.parent_run_id, { inputs: false });
    if (!up) return undefined;
    run = up;
  }
  return failed;
}

/**
 * Fills the rows [first, first + count) that the re-run has not stored yet with the parent's
 * completed rows of the same node, marked carried (cost 0): the block then runs only the rest, and
 * its pages reference the carried rows (a line `^`, the parent as the page's base) instead of
 * copying them, so deleting the parent (D39) leaves nothing of its rows readable here.
 */
export async function fillCarried(
  c: Pick<Collections, 'itemBlocks'>,
  parentRunId: string,
  nodeId: string,
  first: number,
  rows: Array<StoredRow | null>,
  existing: Set<number>,
): Promise<number> {
  const pages = pagesOf(first, first + rows.length).filter((p) => !existing.has(p));
  const read = await Promise.all(pages.map((p) => readPage(c, parentRunId, nodeId, p)));
  let carried = 0;
  pages.forEach((p, i) => {
    read[i]?.forEach((row, k) => {
      const at = p * PAGE_ROWS + k - first;
      if (!row || row.item.status !== 'completed' || at < 0 || at >= rows.length || rows[at])
        return;
      rows[at] = { item: row.item, cost: 0, carried: true };
      carried++;
    });
  });
  return carried;
}

/** What a row carried by reference stands for until it is read through its base page (store/item-blocks.ts). */
const CARRIED_ROW: StoredRow = {
  item: { status: 'completed', parts: [] },
  cost: 0,
  carried: true,
};

/**
 * D38: marks every row of the block [first, first + rows.length) that is not in `runRows` and not
 * stored yet as carried (written as a reference to the parent's row, `^`), without reading the
 * parent: its record listed the rows it did not complete (`StoredOutput.failed`), and those alone run.
 */
export function carryAllBut(
  first: number,
  rows: Array<StoredRow | null>,
  runRows: number[],
): number {
  const run = new Set(runRows);
  let carried = 0;
  rows.forEach((row, at) => {
    if (row || run.has(first + at)) return;
    rows[at] = CARRIED_ROW;
    carried++;
  });
  return carried;
}
