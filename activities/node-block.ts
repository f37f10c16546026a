/**
 * One block of a big I/O node's rows (D35 claim check): the rows come from the store (or, for a
 * list that came with the request, from the activity's input), the items go to the store, and the
 * answer carries only counts and cost, so no row or answer ever enters Temporal's history.
 *
 * A block spans whole pages (domain/item-blocks.ts), so each page has one writer: the block's
 * attempt. Every second (or as soon as EARLY_WRITE_PAGES of them are) the pages that became
 * complete are inserted (one round trip); when the attempt stops (done, failed, cancelled) the
 * pages left incomplete are written too. A retried attempt (worker killed, provider down for a
 * while) reads the block's pages and runs only the rows they lack: a finished row is called again
 * only if its page was not yet complete when a worker died. Two attempts can be alive at once (an
 * operator's reset of the run, a stalled worker's attempt past its heartbeat timeout): a page one
 * of them finds stored is merged with it (store/item-blocks.ts mergePages), never dropped or
 * overwritten. The heartbeat carries
 * only the checkpoints of rows in flight (a model's prediction id). The run is billed from the
 * block's answer (or, after a failure or cancel, from the stored pages), which counts every stored
 * row once whichever attempt ran it: an answer whose pages took another attempt's rows is counted
 * from the stored pages too, so it bills what is readable.
 *
 * D36: the calls made for a row (activities/node-chunk.ts RowCalls) are kept in the heartbeat
 * (`calls`, by row index) until its page is stored, which then counts them in the row's usage, so
 * they survive Temporal's retries of the block. Those of rows left unfinished travel as
 * `uncounted`: in the answer, the failure's details and the checkpoint; so do this attempt's
 * calls of rows whose page kept another attempt's copy (BlockProgress.kept).
 *
 * A row whose call fails transiently is called again in place, after the backoff of the block's
 * retry policy, until it has made NODE_MAX_ATTEMPTS calls (activities/row-retries.ts): one row's
 * 503 no longer spends an attempt of the whole block, whose rows would share five.
 */
import { setMaxListeners } from 'node:events';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Item } from '../domain/parts';
import { failed, unpackItem } from '../domain/items';
import {
  boundedItem,
  oneItem,
  PAGE_ROWS,
  pagesOf,
  storedRowMaxBytes,
  type StoredRow,
} from '../domain/item-blocks';
import type { Collections } from '../store/db';
import type { StorageQuota } from '../store/storage-quota';
import { insertPages, mergePages, readPage, type PageWrite } from '../store/item-blocks';
import { readBlockRows, tallyRows, type BlockRows } from '../store/block-tally';
import { nodeAttempts, nodeRetries } from '../lib/metrics';
import { BlockStorage } from './block-storage';
import { carryAllBut, fillCarried } from './carry-over';
import { HEARTBEAT_EVERY_MS, inRow } from './heartbeat';
import { cancelledByShutdown, handBack } from './shutdown';
import { waitingForStore } from './store-wait';
import type { RowExecutors } from './node-chunk';
import {
  callUsage,
  executeRow,
  refusal,
  RowCalls,
  rowScope,
  uncountedField,
  withUncounted,
} from './node-chunk';
import type { CallUsage } from '../domain/run-usage';
import { priorityOfKey } from '../domain/run-priority';
import { CallScheduler } from './call-scheduler';
import { pause, ROW_RETRY_AFTER_MAX_MS, RowRetries } from './row-retries';
import type { NodeBlockRequest, NodeBlockResult, NodeResult, NodeRow, PortSource } from './types';

type C = Pick<Collections, 'itemBlocks' | 'itemUsage'>;

/**
 * Builds the activity that runs one block of a node's rows. A block holds the items of its pages
 * until they are written, so the worker runs at most `blocks`' slots of them at once, handed
 * round-robin between accounts (by run priority within one, as provider calls are): fourteen runs
 * of 4,000 rows whose server answered 120 KB a row ran a worker of 716 MB of heap out of memory.
 * What the block stores counts against its account's storage `quota` (D19, activities/block-storage.ts).
 */
export function createNodeBlockActivity(
  executors: RowExecutors,
  collections: C,
  blocks: CallScheduler = new CallScheduler({
    slots: DEFAULT_WORKER_BLOCKS,
    capOf: () => Infinity,
  }),
  quota?: StorageQuota,
) {
  const runBlock = blockRunner(executors, collections, quota);
  return async function runNodeBlock(req: NodeBlockRequest): Promise<NodeBlockResult> {
    const context = Context.current();
    const owner = {
      accountId: req.accountId ?? 'unknown',
      // The run's key: the request's where the block has the neutral one (D36, `blocks-fair`).
      priority: priorityOfKey(req.priorityKey ?? context.info.priority?.priorityKey),
    };
    // Waiting for a slot keeps the attempt alive and its rows' checkpoints as they were.
    const waiting = setInterval(
      () => context.heartbeat(context.info.heartbeatDetails),
      HEARTBEAT_EVERY_MS,
    );
    let started = false;
    try {
      return await blocks.run(
        owner,
        () => {
          started = true;
          clearInterval(waiting);
          return runBlock(req, context);
        },
        context.cancellationSignal,
      );
    } catch (err) {
      if (started || !context.cancellationSignal.aborted) throw err;
      // Cancelled, or the worker is shutting down, before the block's turn: nothing ran here.
      if (cancelledByShutdown(context)) throw handBack();
      const stored = await storedTally(
        collections,
        blockOf(req),
        () => context.heartbeat(context.info.heartbeatDetails),
        new BlockProgress(context.info.heartbeatDetails, req.first).calls,
      );
      return { ...stored, cancelled: true };
    } finally {
      clearInterval(waiting);
    }
  };
}

/**
 * What a block heartbeats: the checkpoints of rows in flight by row index, and (D36) `calls`, the
 * calls made for rows whose page is not known stored, and `uncounted`, those of the rows not
 * finished (what a timeout that ends the node leaves uncounted). Both are absent while no call
 * is made.
 */
type BlockCheckpoint = Record<string, unknown> & {
  calls?: Record<string, number>;
  uncounted?: CallUsage;
  /**
   * D36 max_cost: the block's rows stored when this ask first queued its rows, or where an attempt
   * without one ran the rows left in flight, what makes those the ask's last (`BlockProgress.allowed`).
   */
  base?: number;
  /** When each row waiting for its next call may be called (epoch ms, `BlockProgress.waits`). */
  waits?: Record<string, number>;
};

/**
 * A block's checkpoint (BlockCheckpoint) as an attempt resumes and keeps it: the checkpoints of
 * its rows in flight, and (D36) the calls made for its rows until their pages are stored.
 */
class BlockProgress {
  readonly pending: Map<number, unknown>;
  readonly calls: RowCalls;
  /**
   * The rows waiting for their next call (a provider's `Retry-After`, the backoff,
   * activities/row-retries.ts): when each may be called, in epoch ms. Kept in the checkpoint, so
   * the next attempt after a worker's restart waits what is left (a row asked to wait 60 s was
   * called again 14 s after its 429, as the next attempt started).
   */
  readonly waits: Map<number, number>;
  private rows: Array<StoredRow | null> | undefined;
  /** D36 max_cost: the block's rows stored when the ask's first attempt queued its rows (`allowed`). */
  private base: number | undefined;
  /** The rows an earlier attempt left in flight in the checkpoint (its `calls` or a row's checkpoint). */
  private readonly inFlight: Set<number>;
  /** The calls of the rows as the attempt started: earlier attempts' (`kept`). */
  private readonly before: RowCalls;
  /** This attempt's own calls of the rows whose stored copy, another attempt's, was kept (`kept`). */
  private readonly lostCalls = new Map<number, CallUsage>();
  /** The rows this attempt finished, its calls' (`rowRecorder`). */
  readonly finished = new Set<number>();
  /** The rows whose copy in the pages this attempt put there (`stored`). */
  private readonly storedHere = new Set<number>();

  constructor(
    details: unknown,
    private readonly first: number,
  ) {
    const saved = (details ?? {}) as BlockCheckpoint;
    this.pending = new Map(
      Object.entries(saved)
        .filter(([key]) => /^\d+$/.test(key))
        .map(([index, row]) => [Number(index), row]),
    );
    this.calls = new RowCalls(saved.calls);
    this.waits = new Map(
      Object.entries(saved.waits ?? {})
        .map(([index, at]): [number, number] => [Number(index), at])
        .filter(([index, at]) => Number.isSafeInteger(index) && Number.isFinite(at)),
    );
    this.base = Number.isSafeInteger(saved.base) ? saved.base : undefined;
    this.inFlight = new Set([
      ...this.pending.keys(),
      ...Object.keys(this.calls.checkpoint()).map(Number),
    ]);
    this.before = new RowCalls(saved.calls);
  }

  /** D36: this attempt's copy of row `index` is in the pages, put there by its write (RowOwner). */
  stored(index: number): void {
    this.storedHere.add(index);
  }

  /**
   * D36: row `index`'s page kept its stored copy over this attempt's row (store/item-blocks.ts
   * mergePages, RowOwner). Another attempt's copy, whose usage counts that attempt's calls, when
   * this attempt finished the row and did not store it itself: then this one's calls of the row
   * (those it made here, its tokens) are counted with the calls of rows not finished, never
   * billed (the provider saw 14 calls of six rows run twice, and the usage said 8). Told by who
   * stored the row, not by its content: a deterministic model's two copies are identical (the
   * provider saw 15 calls, the usage said 10). A row read from the pages at the start, or stored
   * by an earlier write of this attempt, is its own copy. Told twice, a row counts once.
   */
  kept(index: number): void {
    const row = this.rows?.[index - this.first];
    if (!this.finished.has(index) || this.storedHere.has(index) || !row?.u) return;
    const [calls, input_tokens, output_tokens, failed = 0] = row.u;
    const ownFailed = Math.max(0, failed - this.before.of(index)); // the earlier ones the copy counts
    this.lostCalls.set(index, { calls, input_tokens, output_tokens, failed_calls: ownFailed });
  }

  /** The calls `kept` counts, for an answer counted from the stored pages. */
  lostUsage(): CallUsage[] {
    return [...this.lostCalls.values()];
  }

  /**
   * D36 max_cost: which of its `queue`d rows an attempt of an ask limited to `limit` rows may
   * run, `stored` being the block's rows stored (or stored failed upstream, or carried, D38) once
   * its rows are queued. Every attempt of one ask (one scheduled activity) shares its `limit`: a
   * drain's hand-back, a killed worker or a heartbeat timeout each gave the next attempt `limit`
   * rows more (a run capped at 50 rows answered 80, billed at max_cost: the service paid the rest).
   * The ask's first attempt records `base`, the rows stored then, heartbeated (`checkpoint`)
   * before any row runs; a later one runs what `limit` leaves after the rows stored since, which
   * this ask ran (by any of its attempts, merged pages included). A `resumed` ask is a new
   * activity: its base counts the rows the earlier asks stored. Rows another ask stored meanwhile
   * (an old attempt of it still alive) count against this one: the cap errs on the side of fewer.
   *
   * A later attempt that finds no base: if the checkpoint names rows in flight (`calls` or a
   * row's checkpoint: an attempt of a worker without `base`, during a deploy, usually handed back
   * by its drain), how many rows that attempt ran is unknown, but those it left unstored were in
   * its queue, of at most `limit` rows: the attempt runs them (not stored since, at most `limit`)
   * and no other, which keeps the ask within its limit. Its base is then set as if the earlier
   * attempts had stored the rest of the limit (`stored` less what `limit` leaves after those
   * rows), so the attempts after it run no more than those rows in all. Running none instead, the
   * conservative side, failed the run: a resumed ask whose answer stores no row is one that made
   * no progress (workflows/run-workflow.ts). With no rows in flight in the checkpoint, no earlier
   * attempt is known to have run a row (it waited for a slot, or for the store, or died before its
   * heartbeat got through): its base is taken now. What that can let through is the rows an
   * attempt killed outright ran before its heartbeat was delivered (the SDK throttles heartbeats,
   * to 8 s with the block's 10 s timeout), once: the next attempt has a base.
   */
  allowed(queue: NodeRow[], limit: number, stored: number, attempt: number): NodeRow[] {
    if (this.base === undefined && attempt > 1 && this.inFlight.size > 0) {
      const rows = queue.filter((row) => this.inFlight.has(row.index)).slice(0, limit);
      this.base = stored - (limit - rows.length);
      return rows;
    }
    this.base ??= stored;
    return queue.slice(0, Math.max(0, limit - Math.max(0, stored - this.base)));
  }

  /** The block's rows, as read from its pages and then as they end: a stored row counts its calls already. */
  track(rows: Array<StoredRow | null>): void {
    this.rows = rows;
    this.calls.forget((index) => rows[index - this.first] != null);
    for (const index of this.waits.keys()) if (rows[index - this.first]) this.waits.delete(index);
  }

  /** The calls of the rows not finished, which no stored row counts. */
  uncounted(): CallUsage {
    return this.calls.withRows(
      this.lostUsage(),
      (index) => this.rows?.[index - this.first] == null,
    );
  }

  checkpoint(): BlockCheckpoint {
    const rows = {
      ...Object.fromEntries(this.pending),
      ...(this.base !== undefined && { base: this.base }),
      ...(this.waits.size > 0 && { waits: Object.fromEntries(this.waits) }),
    };
    if (this.calls.size === 0) return rows;
    // `uncounted` once the pages are read: before, some of the calls may be stored rows' already.
    return {
      ...rows,
      calls: this.calls.checkpoint(),
      ...(this.rows && { uncounted: this.uncounted() }),
    };
  }
}

/** Blocks one worker runs at once when not configured (WORKER_BLOCKS). */
export const DEFAULT_WORKER_BLOCKS = 8;

/** Blocks one worker process runs at once: WORKER_BLOCKS where configured, else the default. */
export function workerBlockSlots(limits?: { workerBlocks?: number }): number {
  return limits?.workerBlocks ?? DEFAULT_WORKER_BLOCKS;
}

/** Runs one block in its slot: reads its rows and inputs, runs the rest, writes its pages. */
function blockRunner(executors: RowExecutors, collections: C, quota: StorageQuota | undefined) {
  return async function runBlock(
    req: NodeBlockRequest,
    context: Context,
  ): Promise<NodeBlockResult> {
    const progress = new BlockProgress(context.info.heartbeatDetails, req.first);
    // A store that is down (restarting) is waited for, heartbeating with the rows in flight.
    const alive = () => context.heartbeat(progress.checkpoint());
    // D38: a re-run's first attempt has no pages of its own yet (a page has one writer, this block),
    // unless the block ran before, shrunk by max_cost, and now runs the rows it left (D36).
    const fresh = req.carryFrom !== undefined && context.info.attempt === 1 && !req.resumed;
    const { rows, existing } = fresh
      ? {
          rows: Array.from({ length: req.count }, (): StoredRow | null => null),
          existing: new Set<number>(),
        }
      : await waitingForStore(() => readBlockRows(collections, blockOf(req)), alive);
    progress.track(rows);
    const storage = new BlockStorage(collections, quota, req, rows, alive);
    try {
      const [inputs] = await Promise.all([
        waitingForStore(() => readPorts(collections, req), alive),
        // D38: with the parent's failed rows known, the others are carried without reading its pages.
        req.carryFrom &&
          (req.runRows
            ? carryAllBut(req.first, rows, req.runRows)
            : waitingForStore(
                () =>
                  fillCarried(collections, req.carryFrom!, req.node.id, req.first, rows, existing),
                alive,
              )),
      ]);
      let queue = queueRows(req, inputs, rows, storage);
      // D36 max_cost: only the rows that fit the run's budget run now, across all the attempts of
      // this ask (BlockProgress.allowed); the rest stay unfinished (the workflow asks the block
      // again for them once their cost is counted, `resumed`). The first heartbeat below carries
      // the ask's base before any row runs.
      if (req.limit !== undefined) {
        const stored = rows.filter((row) => row !== null).length;
        queue = progress.allowed(queue, req.limit, stored, context.info.attempt);
      }

      const { flushComplete, rowDone, finish } = pageWriter(
        collections,
        req,
        rows,
        existing,
        storage,
        { alive, owner: progress },
      );
      const signal = context.cancellationSignal;
      // Every row in flight listens for the cancel (its provider call's abort): one listener a row is expected.
      setMaxListeners(0, signal);
      let stopped: unknown;
      const beat = () => {
        flushComplete();
        context.heartbeat(progress.checkpoint());
      };
      beat();
      const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
      try {
        stopped = await runRows(executors, req, queue, rows, progress, signal, {
          rowDone,
          storage,
          // A row's transient failure is retried in place, by the block's own policy.
          retries: new RowRetries(context.info.retryPolicy, progress.calls),
        });
      } finally {
        clearInterval(timer);
      }
      const merged = await finish();
      // The pages are written: the next attempt, on another worker, runs only the rows they lack.
      if (cancelledByShutdown(context)) {
        context.heartbeat(progress.checkpoint()); // with the calls the shutdown cut off
        throw handBack();
      }
      const uncounted = progress.uncounted(); // D36
      if (stopped !== undefined && !signal.aborted) {
        context.heartbeat(progress.checkpoint()); // the next attempt resumes rows in flight
        throw withUncounted(stopped, uncounted);
      }
      // Another attempt's rows are in the pages: what they hold now is what is readable, so the
      // answer counts them, as a failed or cancelled block's is counted (tallyBlock).
      const answer = merged
        ? await storedTally(collections, blockOf(req), alive, progress.calls, progress.lostUsage())
        : { ...tallyRows(req.first, rows), ...uncountedField(uncounted) };
      return { ...answer, ...(signal.aborted ? { cancelled: true } : {}) };
    } finally {
      storage.close(); // what a failed write left uncounted in the store is no longer held
    }
  };
}

/** The rows the block still has to run; a row whose input item failed is stored failed at once (never run). */
function queueRows(
  req: NodeBlockRequest,
  inputs: Record<string, Item[]>,
  rows: Array<StoredRow | null>,
  storage: BlockStorage,
): NodeRow[] {
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
        item: storage.counted(
          failed({
            message: `input '${broken}' item ${at} from node '${req.sources[broken]}' failed: ${reason}`,
            type: 'upstream_failed',
          }),
        ),
        cost: 0,
      };
    } else queue.push({ index, ports });
  }
  return queue;
}

/**
 * Pages that became complete since the last write, above which a block writes them at once instead
 * of at its next heartbeat: a block of a few pages never gets there; a re-run's block over many
 * pages (one failed row each, D38) writes them while its rows run, so its last write is small.
 */
const EARLY_WRITE_PAGES = 50;

/** The block's page writes (`pageWriter`). */
interface BlockPages {
  flushComplete: () => void;
  rowDone: (index: number) => void;
  /** Answers whether a write merged rows of another attempt (writePages). */
  finish: () => Promise<boolean>;
}

/**
 * Writes the block's pages: `flushComplete` the pages that became complete (in the background: a
 * failed write is tried again by the next call and by the last flush), `rowDone` as each row ends
 * (EARLY_WRITE_PAGES), `finish` the last write once the rows have stopped, incomplete pages that
 * hold rows too. `owner` learns whose copy of each written row the pages keep (D36).
 */
function pageWriter(
  collections: C,
  req: NodeBlockRequest,
  rows: Array<StoredRow | null>,
  existing: Set<number>,
  storage: BlockStorage,
  { alive, owner }: { alive: () => void; owner: RowOwner },
): BlockPages {
  // Pages whose stored copy is complete never change again; others are written when they complete (or at the end).
  const pages = pagesOf(req.first, req.first + req.count);
  const rowsOf = (page: number): Array<StoredRow | null> => {
    const from = page * PAGE_ROWS - req.first;
    return rows.slice(Math.max(0, from), from + PAGE_ROWS);
  };
  const done = new Set<number>(
    pages.filter((p) => existing.has(p) && rowsOf(p).every((row) => row !== null)),
  );
  // Complete pages known to be stored: their rows keep only what the block's tally reads, so a
  // block holds the items of its unwritten pages alone (a block of 1,000 rows of 120 KB answers
  // held all 120 MB until it ended).
  const stored = new Set<number>();
  const release = (page: number): void => {
    stored.add(page);
    const from = Math.max(0, page * PAGE_ROWS - req.first);
    const to = Math.min(rows.length, (page + 1) * PAGE_ROWS - req.first);
    for (let i = from; i < to; i++) {
      const row = rows[i];
      if (row) rows[i] = { ...row, item: { status: row.item.status, parts: [] } };
    }
  };
  for (const page of done) release(page);
  let merged = false; // a write took another attempt's rows
  const write = (inserts: PageWrite[], replaces: PageWrite[], unsure = false) =>
    writePages(collections, req, { inserts, replaces, unsure }, storage, { alive, owner, merged });
  let writing: Promise<void> = Promise.resolve();
  const flush = (final: boolean): Promise<void> => {
    const inserts: PageWrite[] = [];
    const replaces: PageWrite[] = [];
    for (const page of pages) {
      if (done.has(page)) continue;
      const pageRows = rowsOf(page);
      const complete = pageRows.every((row) => row !== null);
      if (!complete && !(final && pageRows.some((row) => row !== null))) continue;
      // D38: carried rows are written as references to the parent's page (store/item-blocks.ts).
      (existing.has(page) ? replaces : inserts).push({
        page,
        rows: pageRows,
        base: req.carryFrom,
      });
      existing.add(page);
      if (complete) done.add(page);
    }
    if (inserts.length === 0 && replaces.length === 0) return writing;
    // One write at a time: FerretDB does not isolate concurrent writes of one document.
    writing = writing.then(async () => {
      if (await write(inserts, replaces)) merged = true;
      for (const { page } of [...inserts, ...replaces]) if (done.has(page)) release(page);
    });
    return writing;
  };
  let flushFailed: unknown;
  const flushComplete = (): void => {
    completed.clear();
    flush(false).catch((err: unknown) => (flushFailed = err));
  };
  const completed = new Set<number>();
  const rowDone = (index: number): void => {
    const page = Math.floor(index / PAGE_ROWS);
    if (done.has(page) || !rowsOf(page).every((row) => row !== null)) return;
    completed.add(page);
    if (completed.size >= EARLY_WRITE_PAGES) flushComplete();
  };
  const finish = async (): Promise<boolean> => {
    await writing.catch(() => undefined);
    if (flushFailed === undefined) await flush(true);
    else {
      // A write failed on the way: which of its pages got through is unknown, so replace every
      // page with rows but those known to be stored (whose rows were released).
      const all = pages
        .filter((page) => !stored.has(page))
        .map((page) => ({ page, rows: rowsOf(page), base: req.carryFrom }))
        .filter((page) => page.rows.some((row) => row !== null));
      if (await write([], all, true)) merged = true;
    }
    return merged;
  };
  return { flushComplete, rowDone, finish };
}

/** D36: whose copy of each row a block's writes leave in its pages (BlockProgress). */
interface RowOwner {
  /** This attempt's row is in the pages: its write put it there. */
  stored(index: number): void;
  /** The pages kept the stored copy of the row over this attempt's: its own, or another attempt's. */
  kept(index: number): void;
}

/**
 * Writes pages of the block, then its count of what they hold (D19: the count's one writer).
 * `inserts` are the pages not stored when the attempt started; one found stored since (another
 * attempt of the block alive at once, or this write's retry) is merged with it, as `replaces`
 * are: neither attempt's rows are dropped. Answers whether the stored pages held another
 * attempt's rows (store/item-blocks.ts mergePages); tells `owner` which rows of this write it
 * stored and over which a stored copy was kept.
 *
 * A write whose answer was lost (the store went away once it had applied it, and waitingForStore
 * tried it again), or one after a write that failed (`unsure`: `finish`), can find rows this
 * attempt stored without its knowing. A kept copy identical to this attempt's row there is taken
 * as its own: that counts too few calls only if another attempt stored a byte-identical copy of
 * the row in that same window; the other side would count this attempt's calls of those rows
 * twice (in the stored rows and in `uncounted`) after every lost answer.
 */
async function writePages(
  collections: C,
  req: NodeBlockRequest,
  { inserts, replaces, unsure }: { inserts: PageWrite[]; replaces: PageWrite[]; unsure: boolean },
  storage: BlockStorage,
  {
    alive,
    owner,
    merged,
  }: {
    alive: () => void;
    owner: RowOwner;
    /** An earlier write of this attempt took another attempt's rows. */
    merged: boolean;
  },
): Promise<boolean> {
  const eachRow = (write: PageWrite, each: (index: number) => void): void =>
    write.rows.forEach((row, k) => row && each(write.page * PAGE_ROWS + k));
  let insertTries = 0;
  const found = await waitingForStore(() => {
    insertTries++;
    return insertPages(collections, req.runId, req.node.id, inserts);
  }, alive);
  for (const write of inserts)
    if (!found.includes(write)) eachRow(write, (index) => owner.stored(index));
  const merges = [...found, ...replaces];
  let mergeTries = 0;
  const { foreign, kept } = await waitingForStore(() => {
    mergeTries++;
    return mergePages(collections, req.runId, req.node.id, merges);
  }, alive);
  // A page this attempt may have stored without its knowing (a lost answer, a failed write).
  const unknowing = (write: PageWrite): boolean =>
    unsure || mergeTries > 1 || (insertTries > 1 && found.includes(write));
  const keptAt = new Map(kept.map((copy) => [copy.page * PAGE_ROWS + copy.position, copy]));
  for (const write of merges)
    eachRow(write, (index) => {
      const copy = keptAt.get(index);
      if (!copy || (copy.same && unknowing(write))) owner.stored(index);
      else owner.kept(index);
    });
  // D19: once the pages hold another attempt's rows, the block's count is what they hold (each
  // attempt's own count, whichever recorded last, was either side of it).
  if (foreign || merged) {
    const { rows } = await waitingForStore(() => readBlockRows(collections, blockOf(req)), alive);
    storage.recount(rows);
  }
  await storage.record();
  return foreign;
}

/**
 * Runs the queued rows in `req.concurrency` lanes, recording each row's item in `rows` as it ends.
 * A row whose call fails transiently waits and is called again (`retries`, activities/row-retries.ts)
 * while the other lanes run on. Resolves with the error that stopped the lanes (a row that failed
 * for another reason than a refusal, or used its attempts), or undefined: the rows in flight
 * finish, those waiting for their next attempt stay unfinished. A cancel stops them too, leaving
 * its rows unfinished and unbilled.
 */
async function runRows(
  executors: RowExecutors,
  req: NodeBlockRequest,
  queue: NodeRow[],
  rows: Array<StoredRow | null>,
  { pending, calls: rowCalls, waits, finished }: BlockProgress,
  signal: AbortSignal,
  {
    rowDone,
    storage,
    retries,
  }: { rowDone: (index: number) => void; storage: BlockStorage; retries: RowRetries },
): Promise<unknown> {
  let stopped: unknown;
  // Ends the waits of rows between attempts: at the cancel, or once the lanes are stopped.
  const halt = new AbortController();
  setMaxListeners(0, halt.signal); // one listener a waiting row
  const cancelled = () => halt.abort();
  signal.addEventListener('abort', cancelled, { once: true });
  if (signal.aborted) cancelled();
  const stop = (err: unknown): void => {
    stopped ??= err;
    halt.abort();
  };
  const record = rowRecorder(req, rows, { pending, calls: rowCalls, finished }, rowDone);
  const rowMax = storedRowMaxBytes(req); // the item of one row: bounded by its page
  /** Runs the row's attempts until one ends it, or the lanes stop while it waits for the next. */
  const runRow = async (row: NodeRow): Promise<void> => {
    if (!(await waitLeft(waits, row.index, halt.signal))) return;
    for (;;) {
      const scope = rowScope(pending, rowCalls, row.index);
      let result: NodeResult;
      nodeAttempts.inc({ type: req.node.type });
      try {
        result = await inRow(scope, () => executeRow(executors, req, row, rowMax));
      } catch (err) {
        if (signal.aborted) return; // cancelled: the row stays unfinished and unbilled
        const refused = refusal(err);
        if (refused) return record(row.index, refused.item, 0, refused.usage, scope.wasSent());
        const next = retries.after(row.index, err, scope.wasSent());
        if ('stop' in next) return stop(next.stop);
        nodeRetries.inc({ type: req.node.type });
        // The row keeps its lane while it waits: a provider that throttles gets fewer calls, not
        // more. Its calls so far stay in the checkpoint (D36), whatever ends the wait.
        waits.set(row.index, Date.now() + next.waitMs); // till the call: the checkpoint keeps it
        if (!(await pause(next.waitMs, halt.signal))) return;
        waits.delete(row.index);
        continue;
      }
      const { item, length } = boundedItem(oneItem(result.items), rowMax);
      // D19: counted in the account's storage quota (an unpaid node's item past it fails).
      const admitted = await storage.admit(item, length);
      return record(row.index, admitted, result.costUsd, callUsage(result), scope.wasSent());
    }
  };
  const lane = async (): Promise<void> => {
    for (;;) {
      if (stopped !== undefined || signal.aborted) return;
      const row = queue.shift();
      if (!row) return;
      try {
        await runRow(row);
      } catch (err) {
        if (signal.aborted) return; // cancelled: the row stays unfinished and unbilled
        stop(err); // its item could not be counted in the store
      }
    }
  };
  try {
    await Promise.all(
      Array.from({ length: Math.max(1, Math.min(req.concurrency, queue.length)) }, lane),
    );
  } finally {
    signal.removeEventListener('abort', cancelled);
  }
  return stopped;
}

/**
 * Waits what is left of the wait an earlier attempt left row `index` (`waits`, BlockProgress), or
 * less if `halt` aborts first (the cancel, the lanes stopped): answers whether it may be called.
 * A wait past a provider's longest (a clock far off between workers) is cut to it.
 */
async function waitLeft(
  waits: Map<number, number>,
  index: number,
  halt: AbortSignal,
): Promise<boolean> {
  const until = waits.get(index);
  if (until === undefined) return true;
  const left = Math.min(until - Date.now(), ROW_RETRY_AFTER_MAX_MS);
  if (left > 0 && !(await pause(left, halt))) return false;
  waits.delete(index);
  return true;
}

/** Records a row's item in `rows` as it ends, with its usage (D36), and tells `rowDone`. */
function rowRecorder(
  req: NodeBlockRequest,
  rows: Array<StoredRow | null>,
  { pending, calls: rowCalls, finished }: Pick<BlockProgress, 'pending' | 'calls' | 'finished'>,
  rowDone: (index: number) => void,
) {
  return (index: number, item: Item, cost: number, last: CallUsage, sent: boolean): void => {
    // D36: with the row's failed calls (kept in the checkpoint too until its page is stored).
    const usage = rowCalls.usageOf(index, last, sent);
    const failed = usage.failed_calls ?? 0;
    rows[index - req.first] = {
      item,
      cost,
      // A text node's row (D35) made no call: no usage, as a row that never ran.
      ...(req.node.type !== 'text' && {
        u:
          failed > 0
            ? [usage.calls, usage.input_tokens, usage.output_tokens, failed]
            : [usage.calls, usage.input_tokens, usage.output_tokens],
      }),
    };
    pending.delete(index);
    finished.add(index); // D36: this attempt's copy (BlockProgress.kept)
    rowDone(index);
  };
}

/** The block a request runs, as its stored pages are counted (storedTally). */
function blockOf(req: NodeBlockRequest): BlockRows {
  return { runId: req.runId, nodeId: req.node.id, first: req.first, count: req.count };
}

/** Builds the activity that counts what a block's pages hold: a failed or cancelled block is billed from it. */
export function createTallyBlockActivity(collections: C) {
  return async function tallyBlock(req: BlockRows): Promise<NodeBlockResult> {
    return storedTally(collections, req, () => Context.current().heartbeat());
  };
}

/**
 * What a block's stored pages hold, counted as its answer counts them; `alive` while the store is
 * waited for. D36: with `rowCalls`, those of the rows not stored are its `uncounted`, with the
 * calls of rows whose copy lost the merge with a stored one (`lost`, BlockProgress.kept).
 */
async function storedTally(
  collections: C,
  block: BlockRows,
  alive: () => void,
  rowCalls?: RowCalls,
  lost: CallUsage[] = [],
): Promise<NodeBlockResult> {
  const { rows } = await waitingForStore(() => readBlockRows(collections, block), alive);
  const uncounted = rowCalls?.withRows(lost, (index) => rows[index - block.first] == null);
  return { ...tallyRows(block.first, rows), ...uncountedField(uncounted) };
}

/** Every port's items for the block's rows: a stored list's pages read by `_id`, inline ones as given. */
async function readPorts(c: C, req: NodeBlockRequest): Promise<Record<string, Item[]>> {
  const out: Record<string, Item[]> = {};
  await Promise.all(
    Object.entries(req.ports).map(async ([name, source]: [string, PortSource]) => {
      if ('item' in source) out[name] = [source.item];
      else if ('packed' in source) out[name] = source.packed.map(unpackItem);
      else if ('items' in source)
        out[name] = source.items; // blocks scheduled before packing
      else if ('picked' in source) {
        // D38: the rows the block runs, at their places (a carried row needs no input).
        const items: Item[] = new Array<Item>(req.count);
        for (const [index, item] of source.picked) items[index - req.first] = item;
        out[name] = items;
      } else {
        // A list of one row is every row's.
        const [from, n] = source.count === 1 ? [0, 1] : [req.first, req.count];
        // D38: a block that runs a few rows reads only their pages.
        const pages =
          req.runRows && source.count !== 1
            ? [...new Set(req.runRows.map((index) => Math.floor(index / PAGE_ROWS)))]
            : pagesOf(from, from + n);
        const read = await Promise.all(pages.map((p) => readPage(c, req.runId, source.ref, p)));
        const items: Item[] = [];
        pages.forEach((p, i) => {
          const stored = read[i];
          if (!stored)
            throw ApplicationFailure.retryable(
              `rows of node '${source.ref}' page ${p} are not in the store`,
              'RowsMissing',
            );
          stored.forEach((row, k) => {
            const index = p * PAGE_ROWS + k;
            if (index < from || index >= from + n) return;
            items[index - from] =
              row?.item ?? failed({ message: 'the row did not finish', type: 'upstream_failed' });
          });
        });
        out[name] = items;
      }
    }),
  );
  return out;
}
