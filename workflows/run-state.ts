/**
 * The run as its workflow sees it: status, the event log (D11, kept by the run so every
 * stream sees the same numbers), output items with stable ids (D5) and the running cost.
 */
import type { Item } from '../domain/parts';
import { normalizeLabel } from '../domain/labels';
import { idAtOffset, newId } from '../domain/ids';
import { codeToken, itemEventOf, runLength } from '../domain/run-log';
import { type RunArgs } from './definitions';
import { emptyNodeUsage, totalUsage, type NodeUsage, type RunUsage } from '../domain/run-usage';
import { PAGE_ROWS, type StoredOutput } from '../domain/item-blocks';
import {
  outputItemsSpent,
  outputTooLarge,
  RUN_INLINE_MAX_OUTPUT_BYTES,
  RUN_INLINE_MAX_OUTPUT_ITEMS,
  RUN_MAX_OUTPUT_ITEMS,
} from '../domain/run-size';
import { NodeFailure } from './errors';
import { isPatched } from './patches';
import {
  createdEvent,
  failedEvent,
  SNAPSHOT_EVENTS,
  END_TAIL_EVENTS,
  SNAPSHOT_OUTPUT_BYTES,
  SNAPSHOT_TOKEN_CHARS,
  type CompactEvents,
  type OutputItem,
  type BlockInFlight,
  type OutputPage,
  type RunEnding,
  type RunEvent,
  type RunFinal,
  type RunOutput,
  type RunSnapshot,
  type RunStatus,
  type SnapshotOptions,
} from '../domain/run';

type EventBody = RunEvent extends infer E
  ? E extends RunEvent
    ? Omit<E, 'sequence_number'>
    : never
  : never;

interface Slot {
  id: string;
  outputIndex: number;
  item?: Item;
  /** Opened when its iteration started, which then ended with fewer items (a list of none): never filled, no place. */
  unfilled?: true;
}

/** Node types whose usage is counted (D36): the ones that do I/O and cost money. */
const IO_TYPES = new Set(['llm', 'http_request', 'image_generation', 'model']);

/** Item events above which the final log goes to persistence as numbers (RunFinal.itemCodes). */
const COMPACT_LOG_AFTER = 1_000;

/** D31: the JSON a live output page holds at most (past its first item); the caller pages on. */
const OUTPUT_PAGE_BYTES = 1024 * 1024;

export class RunState {
  status: RunStatus = 'running';
  /**
   * The event log (D11). An output item's event is kept as one number, `output_index × 2 + done`
   * (its id follows from the base, domain/ids.ts idAtOffset), made into the event when it is read:
   * a 1,000,000-row run's two million item events take ~16 MB of the worker instead of ~500 MB.
   */
  private readonly log: Array<RunEvent | number>;
  private cost: number;
  /** D17: hold added while the run worked (holdExtended). */
  private extraHoldUsd = 0;
  private error: string | null = null;
  private completedAtMs: number | null = null;
  private outputIndex = 0;
  /** Output items the run holds itself (slots), of `outputIndex` (D31: RUN_INLINE_MAX_OUTPUT_ITEMS). */
  private slotCount = 0;
  /** Whether final() numbered the kept items from 0 (a run before patch `kept-items-at-rows`). */
  private keptRenumbered = false;
  /** JSON size of the output items so far: whether the output fits a query answer (SNAPSHOT_OUTPUT_BYTES). */
  private outputSize = 0;
  /** Producer node id → the user_result node ids it feeds. */
  private readonly resultsFedBy = new Map<string, string[]>();
  /** user_result node id → its slots, by producer iteration, in production order. */
  private readonly slots = new Map<string, Map<number, Slot[]>>();
  /** The id of output item 0; item `k` is `idAtOffset(itemIdBase, k)` (D5 ids, storable without listing them, D31). */
  readonly itemIdBase: string;

  /** JSON bytes of the output items so far (what the run's end writes again, D31). */
  get outputBytes(): number {
    return this.outputSize;
  }
  /** Items done out of the items opened so far, for progress (D33). */
  itemsDone = 0;
  /** D35: user_result node id → its items kept in the store (no slots: ids follow the reserved offset). */
  private readonly storedResults = new Map<string, StoredOutput>();
  /** D36: usage per I/O node that has run, in the order they first reported. */
  private readonly usageByNode = new Map<string, NodeUsage>();
  /** D36: the I/O nodes, whose items count in their usage. */
  private readonly ioNodes = new Set<string>();
  /**
   * D35: blocks started whose activity has not answered, by node and first row: what a settle of
   * the run closed from outside counts from their pages (RunEnding). State only, no command.
   */
  private readonly blocksInFlight = new Map<string, BlockInFlight>();

  /**
   * `bounded`: whether the run's outputs are bounded in all (domain/run-size.ts), asked only when
   * one would pass a bound (the workflow's patch `run-items-bound`).
   */
  constructor(
    private readonly args: RunArgs,
    private readonly clock: { now(): number; random(): number },
    private readonly bounded: () => boolean = () => false,
  ) {
    this.log = [createdEvent(args)];
    this.itemIdBase = newId('item', clock.now(), clock.random);
    this.cost = args.options.startFeeUsd; // D17: the fixed start fee
    for (const node of args.graph.nodes) {
      if (node.type === 'user_result') this.slots.set(node.id, new Map());
      if (IO_TYPES.has(node.type)) this.ioNodes.add(node.id);
    }
    for (const edge of args.graph.edges) {
      if (!this.slots.has(edge.to)) continue;
      const list = this.resultsFedBy.get(edge.from) ?? [];
      list.push(edge.to);
      this.resultsFedBy.set(edge.from, list);
    }
  }

  /** D13: an output item opens when the iteration that produces it starts. */
  iterationStarted(nodeId: string, iteration: number): void {
    for (const resultId of this.resultsFedBy.get(nodeId) ?? []) {
      const slots = this.slots.get(resultId)!;
      if (!slots.has(iteration)) slots.set(iteration, [this.openSlot()]);
    }
  }

  /** D13: the iteration's items close (opening first any that were not announced, e.g. list outputs). */
  iterationDone(nodeId: string, iteration: number, items: Item[]): void {
    if (this.ioNodes.has(nodeId)) {
      const failed = items.filter((item) => item.status === 'failed').length;
      this.addUsage(nodeId, { items_failed: failed, items_completed: items.length - failed });
    }
    const results = this.resultsFedBy.get(nodeId) ?? [];
    if (results.length === 0) return;
    this.takeSlots(results, iteration, items.length);
    // Each item's JSON once, however many results it feeds (one 1 MB item fed 499 of them).
    const sizes = items.map((item) => JSON.stringify(item).length);
    for (const resultId of results) {
      const slots = this.slots.get(resultId)!;
      const list = slots.get(iteration) ?? [];
      slots.set(iteration, list);
      items.forEach((item, k) => {
        const slot = list[k] ?? this.openSlot();
        list[k] = slot;
        if (!slot.item) this.itemsDone++;
        slot.item = item;
        // D31: past what the run holds itself the item fails in place (its end writes it again).
        if (
          this.outputSize + sizes[k] > RUN_INLINE_MAX_OUTPUT_BYTES &&
          slot.item.status === 'completed' &&
          this.bounded()
        )
          slot.item = outputTooLarge();
        this.outputSize += slot.item === item ? sizes[k] : JSON.stringify(slot.item).length;
        this.itemEvent('response.output_item.done', slot);
      });
      for (const slot of list.slice(items.length)) if (!slot.item) slot.unfilled = true;
    }
  }

  /** D31: the slots `n` items of an iteration open in `results`, within what a run holds; else the result fails. */
  private takeSlots(results: string[], iteration: number, n: number): void {
    let opening = 0;
    for (const resultId of results)
      opening += Math.max(0, n - (this.slots.get(resultId)!.get(iteration)?.length ?? 0));
    const inRun = this.slotCount + opening > RUN_INLINE_MAX_OUTPUT_ITEMS;
    if ((inRun || this.outputIndex + opening > RUN_MAX_OUTPUT_ITEMS) && this.bounded())
      throw new NodeFailure(results[0], 'user_result', outputItemsSpent(opening, inRun));
  }

  /**
   * D35: a node of `count` rows keeps its items in the store. Every result it feeds reserves
   * `count` output indices at once, so item `k` is output index `idOffset + k` and its id follows
   * from the run's base (domain/ids.ts idAtOffset): no per-item state beyond the event log.
   */
  reserveStored(nodeId: string, count: number): void {
    const results = (this.resultsFedBy.get(nodeId) ?? []).filter(
      (id) => !this.storedResults.has(id),
    );
    // D31: each item is two events the run logs (a 1,000,000-row list fed to 499 results was 10^9).
    const items = count * results.length;
    if (results.length > 0 && this.outputIndex + items > RUN_MAX_OUTPUT_ITEMS && this.bounded())
      throw new NodeFailure(results[0], 'user_result', outputItemsSpent(items, false));
    for (const resultId of results) {
      this.storedResults.set(resultId, {
        node: nodeId,
        count,
        pageRows: PAGE_ROWS,
        idOffset: this.outputIndex,
      });
      this.outputIndex += count;
    }
  }

  /** D13 for stored rows [first, first + n): their items open. */
  storedStarted(nodeId: string, first: number, n: number): void {
    this.storedEvents(nodeId, [[first, first + n]], 'response.output_item.added');
  }

  /** D35: a block of rows [first, first + count) of a node was handed to its activity. */
  blockStarted(nodeId: string, first: number, count: number): void {
    const io = this.ioNodes.has(nodeId);
    this.blocksInFlight.set(`${nodeId}:${first}`, { node: nodeId, first, count, io });
  }

  /** D35: the block that began at row `first` answered (or was counted from its pages). */
  blockAnswered(nodeId: string, first: number): void {
    this.blocksInFlight.delete(`${nodeId}:${first}`);
  }

  /** D13 for stored rows: their items are done (written to the store). */
  storedDone(nodeId: string, ranges: Array<[number, number]>): void {
    this.storedEvents(nodeId, ranges, 'response.output_item.done');
  }

  private storedEvents(
    nodeId: string,
    ranges: Array<[number, number]>,
    type: 'response.output_item.added' | 'response.output_item.done',
  ): void {
    for (const resultId of this.resultsFedBy.get(nodeId) ?? []) {
      const stored = this.storedResults.get(resultId);
      if (!stored || stored.node !== nodeId) continue;
      const done = type === 'response.output_item.done' ? 1 : 0;
      // As `push` logs an item event, by its number: its id derives from it when read (an id per
      // row here cost ~3 µs, ~0.7 s of workflow task for the 200,000 events of 100,000 rows).
      for (const [from, to] of ranges)
        for (let k = from; k < to; k++) {
          this.itemsDone += done;
          this.log.push((stored.idOffset + k) * 2 + done);
        }
    }
  }

  /** D35: the results whose items are in the store, by label. */
  storedOutputs(): Record<string, StoredOutput> | undefined {
    if (this.storedResults.size === 0) return undefined;
    const out: Record<string, StoredOutput> = {};
    for (const node of this.args.graph.nodes) {
      const stored = this.storedResults.get(node.id);
      if (node.type === 'user_result' && stored) out[normalizeLabel(node.label)] = stored;
    }
    return out;
  }

  addCost(usd: number): void {
    this.cost += usd;
  }

  /** What the run has cost so far, before any D36 cap (the start fee and finished work). */
  get spent(): number {
    return this.cost;
  }

  /** D17: credit held for the run beyond its start's hold (workflows/cost-cap.ts CreditSource), given back with it at the end. */
  holdExtended(usd: number): void {
    this.extraHoldUsd += usd;
  }

  private heldUsd(startHoldUsd: number): number {
    if (this.extraHoldUsd === 0) return startHoldUsd;
    return Math.round((startHoldUsd + this.extraHoldUsd) * 1e9) / 1e9;
  }

  /** D36: adds to a node's usage (calls and tokens as reported, its cost, its items). */
  addUsage(nodeId: string, delta: Partial<NodeUsage>): void {
    let usage = this.usageByNode.get(nodeId);
    if (!usage) {
      usage = emptyNodeUsage();
      this.usageByNode.set(nodeId, usage);
    }
    for (const key of Object.keys(delta) as Array<keyof NodeUsage>) usage[key] += delta[key] ?? 0;
  }

  /** D36: the run's usage so far. */
  usage(): RunUsage {
    return totalUsage(Object.fromEntries(this.usageByNode));
  }

  /** Ends the run; appends exactly one terminal event (D14 for cancellation). */
  finish(status: 'completed' | 'failed' | 'cancelled', error?: string): void {
    if (this.status !== 'running') return;
    this.status = status;
    this.error = status === 'failed' ? (error ?? 'run failed') : null;
    this.completedAtMs = this.clock.now();
    const usage = { usage: null, service_tier: null } as const;
    if (status === 'completed') this.push({ type: 'response.completed', response: usage });
    else if (status === 'cancelled') this.push({ type: 'response.cancelled', response: usage });
    else this.log.push(failedEvent(this.log.length, this.error!));
  }

  /** Answer of the snapshot query: events after `afterSequence` (compact if asked), results once terminal. */
  snapshot(afterSequence: number, options: SnapshotOptions = {}): RunSnapshot {
    const terminal = this.status !== 'running';
    const from = Math.max(0, afterSequence + 1);
    const deferred =
      this.status === 'completed' &&
      (this.outputSize > SNAPSHOT_OUTPUT_BYTES || this.storedResults.size > 0);
    const compact = options.compact === true;
    return {
      status: this.status,
      events: compact ? [] : this.eventsBetween(from, from + SNAPSHOT_EVENTS),
      eventCount: this.log.length,
      ...(compact ? { compact: this.compactFrom(from) } : {}),
      output: this.status === 'completed' && !deferred ? this.output(this.keptRenumbered) : null,
      ...(deferred ? { outputDeferred: true } : {}),
      error: this.error,
      total_cost: this.totalCost(),
      completed_at_ms: terminal ? this.completedAtMs : null,
      usage: this.usage(),
      ...(options.ending === true ? { ending: this.ending() } : {}),
    };
  }

  /**
   * What the run keeps if it ends where it stands (RunEnding), for the API's settle of a run whose
   * workflow was closed from outside: read by a query, so nothing here may change the state.
   */
  private ending(): RunEnding {
    const held: Record<string, number> = {};
    for (const node of this.args.graph.nodes) {
      if (node.type !== 'user_result' || this.storedResults.has(node.id)) continue;
      const finished = this.placedSlots(node.id).filter(({ slot }) => slot.item).length;
      held[normalizeLabel(node.label)] = finished;
    }
    const maxCostUsd = this.args.options.costCap?.maxUsd;
    return {
      held,
      ...(this.storedResults.size > 0 ? { storedOutputs: this.storedOutputs() } : {}),
      blocksInFlight: [...this.blocksInFlight.values()],
      ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
      ...(this.keptRenumbered ? { renumbered: true } : {}),
    };
  }

  /** Answer of the `awaitEnd` update: the terminal snapshot with the log's last END_TAIL_EVENTS. */
  endSnapshot(): RunSnapshot {
    return this.snapshot(this.log.length - 1 - END_TAIL_EVENTS);
  }

  /** Everything persistence needs, once the run has ended. */
  final(): RunFinal {
    if (this.status === 'running' || this.status === 'pending')
      throw new Error('run has not ended');
    // D8, D38: a run that ended with rows unfinished keeps each finished item at its row, as its
    // live pages showed it (patch `kept-items-at-rows`, asked only then); before, the kept items
    // were numbered again from 0, and a re-run carried them into the wrong rows.
    const atRows = !this.renumbersKept() || isPatched('kept-items-at-rows');
    this.keptRenumbered = !atRows;
    return {
      runId: this.args.runId,
      accountId: this.args.accountId,
      status: this.status,
      // D35, D36: a failed or cancelled run keeps the items it finished too, readable through its
      // outputs (GET of the run still shows `output: null` unless it completed).
      output: this.output(!atRows),
      ...(atRows && this.status !== 'completed' ? { itemsAtRows: true } : {}),
      error: this.error,
      totalCost: this.totalCost(),
      completedAtMs: this.completedAtMs!,
      ...this.finalLog(),
      itemIdBase: this.itemIdBase,
      ...(this.storedResults.size > 0 ? { storedOutputs: this.storedOutputs() } : {}),
      usage: this.usage(),
      // D17: the hold the run was started with and what was added to it, so finalize need not read it from the record.
      ...(this.args.holdUsd !== undefined ? { holdUsd: this.heldUsd(this.args.holdUsd) } : {}),
    };
  }

  /** Items opened so far (D13), for progress (D33). */
  get itemsOpened(): number {
    return this.outputIndex;
  }

  /**
   * D31: one page of a result's items, live: every item opened so far in output order, those
   * not finished yet as `running`. Null for an unknown label.
   */
  outputPage(label: string, afterItemId: string | null, limit: number): OutputPage | null {
    const node = this.args.graph.nodes.find(
      (n) => n.type === 'user_result' && normalizeLabel(n.label) === label,
    );
    if (!node) return null;
    // Between the run's end and its record (finalize), the page is the record's: finished items only.
    const ended = this.status !== 'running';
    const stored = this.storedResults.get(node.id);
    if (stored)
      return {
        items: [],
        has_more: false,
        stored,
        itemIdBase: this.itemIdBase,
        ...(ended ? { ended } : {}),
      };
    const all = this.placedSlots(node.id);
    // Numbered as the record will number them (final): from 0 in a run before the patch.
    const ordered = ended
      ? all
          .filter(({ slot }) => slot.item)
          .map(({ slot, place }, k) => ({ slot, place: this.keptRenumbered ? k : place }))
      : all;
    let from = 0;
    if (afterItemId !== null) {
      const at = ordered.findIndex(({ slot }) => slot.id === afterItemId);
      if (at < 0) return { items: [], has_more: false, unknown_cursor: true };
      from = at + 1;
    }
    // A page is bounded by its bytes too: a query's answer must stay well under Temporal's
    // message limits, and an item may hold up to 1 MiB (D35).
    const items: OutputItem[] = [];
    let bytes = 0;
    for (let k = from; k < Math.min(ordered.length, from + limit); k++) {
      const item = toOutputItem(ordered[k].slot, ordered[k].place);
      bytes += JSON.stringify(item).length;
      if (items.length > 0 && bytes > OUTPUT_PAGE_BYTES) break;
      items.push(item);
    }
    return { items, has_more: from + items.length < ordered.length };
  }

  private totalCost(): number {
    // D36: a run with max_cost is never billed past it, also when a call cost more than its budget.
    const cap = this.args.options.costCap?.maxUsd ?? Infinity;
    return Math.round(Math.min(this.cost, cap) * 1e9) / 1e9; // float sums drift; the ledger wants stable numbers
  }

  /**
   * Each slot of a result with its item's place among the result's items: the rows before it
   * count their items, a row that never started counts one (as far as anything is known of it),
   * so for a node of one item a row an item's place is its row (D8, D38).
   */
  private placedSlots(resultId: string): Array<{ slot: Slot; place: number }> {
    const byIteration = this.slots.get(resultId)!;
    const placed: Array<{ slot: Slot; place: number }> = [];
    let place = 0;
    let last = -1;
    for (const iteration of [...byIteration.keys()].sort((a, b) => a - b)) {
      place += Math.max(0, iteration - last - 1);
      last = iteration;
      for (const slot of byIteration.get(iteration)!)
        if (!slot.unfilled) placed.push({ slot, place: place++ });
    }
    return placed;
  }

  /**
   * Whether numbering a result's finished items from 0 (as runs before patch `kept-items-at-rows`
   * did) would give any of them another `item_index` than its place: a run that ended with a row
   * unfinished, or not started, before a finished one. Never so of a run that completed whole.
   */
  private renumbersKept(): boolean {
    for (const node of this.args.graph.nodes) {
      if (node.type !== 'user_result' || this.storedResults.has(node.id)) continue;
      let kept = 0;
      for (const { slot, place } of this.placedSlots(node.id))
        if (slot.item && place !== kept++) return true;
    }
    return false;
  }

  /**
   * The `output` object: result labels to items in iteration order, only items that ended (D8).
   * An item's `item_index` is its place among the result's items (placedSlots: its row, for
   * nodes of one item a row), as a live page shows it; `renumbered`: the kept items numbered
   * from 0 instead, as runs before patch `kept-items-at-rows` did.
   */
  private output(renumbered = false): RunOutput {
    const output: RunOutput = {};
    for (const node of this.args.graph.nodes) {
      if (node.type !== 'user_result') continue;
      if (this.storedResults.has(node.id)) {
        output[normalizeLabel(node.label)] = []; // D35: in the store (storedOutputs)
        continue;
      }
      const items: OutputItem[] = [];
      for (const { slot, place } of this.placedSlots(node.id)) {
        if (!slot.item) continue;
        items.push(toOutputItem(slot, renumbered ? items.length : place));
      }
      output[normalizeLabel(node.label)] = items;
    }
    return output;
  }

  private openSlot(): Slot {
    this.slotCount++;
    const outputIndex = this.outputIndex++;
    const slot: Slot = { id: idAtOffset(this.itemIdBase, outputIndex), outputIndex };
    this.itemEvent('response.output_item.added', slot);
    return slot;
  }

  private itemEvent(
    type: 'response.output_item.added' | 'response.output_item.done',
    slot: Slot,
  ): void {
    this.push({
      type,
      output_index: slot.outputIndex,
      item: { type: 'message', id: slot.id, phase: 'final_answer' },
    });
  }

  private push(body: EventBody): void {
    if (body.type === 'response.output_item.added' || body.type === 'response.output_item.done') {
      this.log.push(body.output_index * 2 + (body.type === 'response.output_item.done' ? 1 : 0));
      return;
    }
    // `type` then `sequence_number` lead every event, so the wire format reads the same for every type.
    this.log.push(
      Object.assign({ type: body.type, sequence_number: this.log.length }, body) as RunEvent,
    );
  }

  /** The whole log (D11), events made from their numbers. */
  get events(): RunEvent[] {
    return this.eventsBetween(0, this.log.length);
  }

  /** Events [from, to) of the log. */
  private eventsBetween(from: number, to: number): RunEvent[] {
    const out: RunEvent[] = [];
    for (let i = Math.max(0, from); i < Math.min(to, this.log.length); i++) {
      const entry = this.log[i];
      out.push(typeof entry === 'number' ? itemEventOf(this.itemIdBase, entry, i) : entry);
    }
    return out;
  }

  /**
   * D35: events from `from` on as CompactEvents: a stretch of item events is read as runs of
   * consecutive codes, each one token, until the answer's bounds (SNAPSHOT_EVENTS whole events,
   * SNAPSHOT_TOKEN_CHARS of tokens).
   */
  private compactFrom(from: number): CompactEvents {
    const { log } = this;
    const pieces: CompactEvents['pieces'] = [];
    let tokens: string[] = [];
    let chars = 0;
    let whole = 0;
    const endTokens = () => {
      if (tokens.length > 0) pieces.push(tokens.join(','));
      tokens = [];
    };
    for (let i = from; i < log.length && whole < SNAPSHOT_EVENTS && chars < SNAPSHOT_TOKEN_CHARS;) {
      const entry = log[i];
      if (typeof entry !== 'number') {
        endTokens();
        pieces.push(entry);
        whole++;
        i++;
        continue;
      }
      const count = runLength(log, i);
      const token = codeToken(entry, count);
      tokens.push(token);
      chars += token.length + 1;
      i += count;
    }
    endTokens();
    return { from, itemIdBase: this.itemIdBase, pieces };
  }

  /**
   * The log for persistence: whole when small; a big one (D35) as its first and last events and
   * the numbers of the item events between, which domain/run-chunks.ts stores without making
   * two million events of them.
   */
  private finalLog(): Pick<RunFinal, 'events' | 'itemCodes'> {
    const inner = this.log.length - 2;
    const compact =
      inner > COMPACT_LOG_AFTER &&
      this.log.slice(1, -1).every((entry) => typeof entry === 'number');
    if (!compact) return { events: this.events };
    return {
      events: [this.log[0] as RunEvent, this.log.at(-1) as RunEvent],
      itemCodes: this.log.slice(1, -1) as number[],
    };
  }
}

/** A slot as an output item of a live page: finished items as they ended, the rest `running`. */
function toOutputItem(slot: Slot, itemIndex: number): OutputItem {
  if (!slot.item) return { id: slot.id, item_index: itemIndex, status: 'running', parts: [] };
  const { status, parts, error } = slot.item;
  return { id: slot.id, item_index: itemIndex, status, parts, ...(error ? { error } : {}) };
}
