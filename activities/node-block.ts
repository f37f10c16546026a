/**
 * One block of a big I/O node's rows (D35 claim check): the rows come from the store (or, for a
 * list that came with the request, from the activity's input), the items go to the store, and the
 * answer carries only counts and cost, so no row or answer ever enters Temporal's history.
 *
 * Finished rows are written to the node's block document (by `_id`) at most every second and at
 * the end, one write at a time; a retried attempt (worker killed, provider down for a while) reads
 * that block and runs only the rows it lacks, so a finished row is never called again. The
 * heartbeat carries only the checkpoints of rows in flight (a model's prediction id). The run is
 * billed from the block's answer (or, after a failure or cancel, from the stored block), which
 * counts every finished row once whichever attempt ran it.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Item } from '../domain/parts';
import { failed } from '../domain/items';
import { blocksOf, oneItem, toRanges, type StoredRow } from '../domain/item-blocks';
import type { Collections } from '../store/db';
import { readBlock, writeBlock } from '../store/item-blocks';
import { HEARTBEAT_EVERY_MS, inRow } from './heartbeat';
import type { RowExecutors } from './node-chunk';
import { executeRow, refusedItem } from './node-chunk';
import type { NodeBlockRequest, NodeBlockResult, NodeRow, PortSource } from './types';

type C = Pick<Collections, 'itemBlocks'>;

/** Builds the activity that runs one block of a node's rows. */
export function createNodeBlockActivity(executors: RowExecutors, collections: C) {
  return async function runNodeBlock(req: NodeBlockRequest): Promise<NodeBlockResult> {
    const context = Context.current();
    const pending = new Map<number, unknown>(
      Object.entries((context.info.heartbeatDetails as Record<string, unknown>) ?? {}).map(
        ([index, details]) => [Number(index), details],
      ),
    );
    const saved = await readBlock(collections, req.runId, req.node.id, req.block);
    const rows: Array<StoredRow | null> =
      saved?.rows ?? Array.from({ length: req.count }, () => null);
    const inputs = await readPorts(collections, req);
    const queue: NodeRow[] = [];
    for (let p = 0; p < req.count; p++) {
      if (rows[p]) continue;
      const index = req.first + p;
      const ports: Record<string, Item> = {};
      let broken: string | undefined;
      for (const [name, items] of Object.entries(inputs)) {
        const item = items.length === 1 && req.count !== 1 ? items[0] : items[p];
        ports[name] = item ?? failed({ message: 'no item', type: 'upstream_failed' });
        if (ports[name].status === 'failed') broken ??= name;
      }
      if (broken !== undefined) {
        const reason = ports[broken].error?.message ?? 'unknown error';
        const at = inputs[broken].length === 1 && req.count !== 1 ? 0 : index;
        rows[p] = {
          item: failed({
            message: `input '${broken}' item ${at} from node '${req.sources[broken]}' failed: ${reason}`,
            type: 'upstream_failed',
          }),
          cost: 0,
        };
      } else queue.push({ index, ports });
    }

    let dirty = saved === null || queue.length < req.count;
    let writing: Promise<void> = Promise.resolve();
    const flush = (): Promise<void> => {
      if (!dirty) return writing;
      dirty = false;
      const snapshot = rows.slice();
      // One write at a time: FerretDB does not isolate concurrent writes of one document.
      writing = writing.then(() =>
        writeBlock(collections, req.runId, req.node.id, req.block, snapshot),
      );
      return writing;
    };
    const signal = context.cancellationSignal;
    let stopped: unknown;
    const record = (index: number, item: Item, cost: number): void => {
      rows[index - req.first] = { item, cost };
      pending.delete(index);
      dirty = true;
    };
    const lane = async (): Promise<void> => {
      for (;;) {
        if (stopped !== undefined || signal.aborted) return;
        const row = queue.shift();
        if (!row) return;
        try {
          const scope = {
            resumed: pending.get(row.index),
            checkpoint: (details: unknown) => pending.set(row.index, details),
          };
          const result = await inRow(scope, () => executeRow(executors, req, row));
          record(row.index, oneItem(result.items), result.costUsd);
        } catch (err) {
          if (signal.aborted) return; // cancelled: the row stays unfinished and unbilled
          const refusal = refusedItem(err);
          if (refusal) record(row.index, refusal, 0);
          else stopped ??= err;
        }
      }
    };
    const beat = () => {
      flush().catch(() => undefined); // a failed flush is retried by the next beat and the last write
      context.heartbeat(Object.fromEntries(pending));
    };
    beat();
    const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
    try {
      await Promise.all(
        Array.from({ length: Math.max(1, Math.min(req.concurrency, queue.length)) }, lane),
      );
    } finally {
      clearInterval(timer);
    }
    dirty = true;
    await flush().catch(() => flush());
    if (stopped !== undefined && !signal.aborted) {
      context.heartbeat(Object.fromEntries(pending)); // the next attempt resumes rows in flight
      throw stopped;
    }
    return { ...tally(req.first, rows), ...(signal.aborted ? { cancelled: true } : {}) };
  };
}

/** Builds the activity that counts what a block holds: the rows a failed or cancelled block finished are billed from it. */
export function createTallyBlockActivity(collections: C) {
  return async function tallyBlock(req: {
    runId: string;
    nodeId: string;
    block: number;
    first: number;
  }): Promise<NodeBlockResult> {
    const saved = await readBlock(collections, req.runId, req.nodeId, req.block);
    return tally(req.first, saved?.rows ?? []);
  };
}

function tally(first: number, rows: Array<StoredRow | null>): NodeBlockResult {
  const done: number[] = [];
  let costUsd = 0;
  rows.forEach((row, p) => {
    if (!row) return;
    done.push(first + p);
    costUsd += row.cost;
  });
  const all = done.length === rows.length;
  return { done: done.length, ranges: all ? [] : toRanges(done), costUsd };
}

/** Every port's items for the block's rows: a stored list's block read by `_id`, inline ones as given. */
async function readPorts(c: C, req: NodeBlockRequest): Promise<Record<string, Item[]>> {
  const out: Record<string, Item[]> = {};
  await Promise.all(
    Object.entries(req.ports).map(async ([name, source]: [string, PortSource]) => {
      if ('item' in source) out[name] = [source.item];
      else if ('items' in source) out[name] = source.items;
      else {
        // The producer's blocks that hold this block's rows (a list of one row is every row's).
        const [from, n] = source.count === 1 ? [0, 1] : [req.first, req.count];
        const blocks = blocksOf(from, from + n, source.blockRows);
        const read = await Promise.all(
          blocks.map((b) => readBlock(c, req.runId, source.ref, b).then((got) => ({ b, got }))),
        );
        const items: Item[] = [];
        for (const { b, got } of read) {
          if (!got)
            throw ApplicationFailure.retryable(
              `rows of node '${source.ref}' block ${b} are not in the store`,
              'RowsMissing',
            );
          for (let k = 0; k < got.rows.length; k++) {
            const index = b * source.blockRows + k;
            if (index < from || index >= from + n) continue;
            const row = got.rows[k];
            items.push(
              row?.item ?? failed({ message: 'the row did not finish', type: 'upstream_failed' }),
            );
          }
        }
        out[name] = items;
      }
    }),
  );
  return out;
}
