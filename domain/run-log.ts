/**
 * A run's event log (D11) as the API holds it while streaming: flat in memory at any size (D35).
 *
 * Every event between a run's `response.created` and its terminal event is an output item's
 * `added` or `done`, and an item's id follows from the run's item id base and its output index
 * (domain/ids.ts idAtOffset). So an item event is one number, its code `output_index × 2 + done`
 * (as the workflow keeps it, workflows/run-state.ts, and stores it, domain/run-chunks.ts), and a
 * block's rows (D35: consecutive items, one type) are one segment `(first code, count)`. A
 * finished 1,000,000-row run's two million item events are a few thousand segments here; as
 * objects they were ~500 MB in the API (measured) for every such run a client streamed. Events
 * are made again when read, one at a time, as a stream sends them: as the JSON text it writes
 * (`jsonAt`), or as objects (`at`). An event that is not such an item event (the first, the
 * last, items of runs from before the base) is kept whole.
 */
import { IdSequence, idAtOffset } from './ids';
import type { CompactEvents, RunEvent, RunSnapshot } from './run';

/** Read access to a log's first `length` events. */
export interface EventsView {
  readonly length: number;
  /** The event with this sequence number, 0 ≤ sequence < length. */
  at(sequence: number): RunEvent;
  /** Its JSON text, `JSON.stringify(at(sequence))`: an item event's written straight, what a stream sends. */
  jsonAt(sequence: number): string;
}

/** An output item's event: what the log keeps as a number. */
export type ItemEvent = Extract<
  RunEvent,
  { type: 'response.output_item.added' | 'response.output_item.done' }
>;

/** The item event with code `output_index × 2 + done` at `sequence`, its id from the run's base. */
export function itemEventOf(base: string, code: number, sequence: number): RunEvent {
  return itemEvent(idAtOffset(base, Math.floor(code / 2)), code, sequence);
}

/** The item event with code `code` at `sequence`, its item's id given. */
function itemEvent(id: string, code: number, sequence: number): RunEvent {
  return {
    type: code % 2 === 1 ? 'response.output_item.done' : 'response.output_item.added',
    sequence_number: sequence,
    output_index: Math.floor(code / 2),
    item: { type: 'message', id, phase: 'final_answer' },
  };
}

/**
 * `JSON.stringify(itemEvent(id, code, sequence))`, written straight: a replay of a million-row run
 * sends two million of these, and the object and its serialization were most of a stream's CPU
 * (~1.7 µs an event against ~0.2 here). The unit test holds the two to the same bytes; an id
 * needs no escaping (D5: Crockford base32).
 */
function itemEventJson(id: string, code: number, sequence: number): string {
  const kind = code % 2 === 1 ? 'done' : 'added';
  return `{"type":"response.output_item.${kind}","sequence_number":${sequence},"output_index":${Math.floor(code / 2)},"item":{"type":"message","id":"${id}","phase":"final_answer"}}`;
}

/** The code of an item event: `output_index × 2 + done`. */
export function itemCodeOf(event: ItemEvent): number {
  return event.output_index * 2 + (event.type === 'response.output_item.done' ? 1 : 0);
}

/**
 * The token of `count` item events of one type for consecutive items, codes `code`, `code + 2`,
 * …: `code` or `code*count` in base 36 (a block's rows, D35, are one). Tokens are joined by commas
 * where they are stored (domain/run-chunks.ts) and answered (CompactEvents); `appendItemCodes`
 * reads them.
 */
export function codeToken(code: number, count: number): string {
  return count === 1 ? code.toString(36) : `${code.toString(36)}*${count.toString(36)}`;
}

/** How many entries from `at` on (at least 1) are the codes `codes[at]`, `+ 2`, `+ 4`, …: one token's count. */
export function runLength(codes: ArrayLike<unknown>, at: number): number {
  const first = codes[at] as number;
  let count = 1;
  while (codes[at + count] === first + 2 * count) count++;
  return count;
}

const WHOLE = -1;

export class RunLog implements EventsView {
  /** Segments as triples: first sequence number, first code (WHOLE: one event kept in `whole`), count. */
  private readonly segments: number[] = [];
  private readonly whole = new Map<number, RunEvent>();
  /** The run's item id base, learnt from its first item event or given with stored codes. */
  private base: string | undefined;
  private size = 0;
  /** The ids of the base's sequence, made when first needed. */
  private idSequence: IdSequence | undefined;
  /** The segment the last `at` found: a stream reads in order, so the next is usually there or next. */
  private hint = 0;

  /** A log of `events`, which must be numbered from 0 in order. */
  static of(events: readonly RunEvent[]): RunLog {
    const log = new RunLog();
    for (const event of events) log.append(event);
    return log;
  }

  get length(): number {
    return this.size;
  }

  /** Segments held: what the log costs, about 24 bytes each (tests check a big run stays small). */
  get segmentCount(): number {
    return this.segments.length / 3;
  }

  /** The last event, if any. */
  last(): RunEvent | undefined {
    return this.size === 0 ? undefined : this.at(this.size - 1);
  }

  at(sequence: number): RunEvent {
    const found = this.lookup(sequence);
    return typeof found === 'number' ? itemEvent(this.idAt(found), found, sequence) : found;
  }

  jsonAt(sequence: number): string {
    const found = this.lookup(sequence);
    return typeof found === 'number'
      ? itemEventJson(this.idAt(found), found, sequence)
      : JSON.stringify(found);
  }

  /** The first `length` events, fixed: what a look saw, whatever is appended later. */
  view(length = this.size): EventsView {
    return {
      length,
      at: (sequence) => this.at(sequence),
      jsonAt: (sequence) => this.jsonAt(sequence),
    };
  }

  /** Appends the event that continues the log (sequence number = length); false for any other. */
  append(event: RunEvent): boolean {
    if (event.sequence_number !== this.size) return false;
    const code = this.compactCode(event);
    if (code === undefined) this.push(WHOLE, 1, event);
    else this.push(code, 1);
    return true;
  }

  /**
   * Appends stored item events (domain/run-chunks.ts): tokens `code` or `code*count` in base 36,
   * comma-separated, of the run whose item id base is `base`.
   */
  appendItemCodes(base: string, tokens: string): void {
    for (const [code, count] of parseTokens(tokens)) this.pushCodes(base, code, count);
  }

  /**
   * Appends what a `snapshot` answer has that continues the log: its `events`, or its compact
   * events (workflow code from before SnapshotOptions answers the former whatever is asked). An
   * answer may begin before the log's end (asked for before other events came in another way).
   * Returns how many events were appended.
   */
  appendAnswer(answer: Pick<RunSnapshot, 'events' | 'compact'>): number {
    const before = this.size;
    for (const event of answer.events) this.append(event);
    if (answer.compact) this.appendCompact(answer.compact);
    return this.size - before;
  }

  /** Appends the compact events that continue the log (see appendAnswer). */
  private appendCompact({ from, itemIdBase, pieces }: CompactEvents): void {
    let sequence = from;
    for (const piece of pieces) {
      if (sequence > this.size) break; // a gap: nothing after it continues the log
      if (typeof piece !== 'string') {
        this.append(piece);
        sequence++;
        continue;
      }
      for (const [code, count] of parseTokens(piece)) {
        if (sequence > this.size) break;
        const skip = this.size - sequence; // the events of the token the log has already
        if (skip < count) this.pushCodes(itemIdBase, code + 2 * skip, count - skip);
        sequence += count;
      }
    }
  }

  /** Appends the events of `other` that this log lacks (those from `length` on), segment by segment. */
  appendFrom(other: RunLog): void {
    if (other.size <= this.size) return;
    for (let s = other.segmentOf(this.size); s < other.segmentCount; s++) {
      const [start, code, count] = other.segment(s);
      const skip = this.size - start; // > 0 only in the segment this log ends inside
      if (code === WHOLE) {
        if (skip === 0) this.push(WHOLE, 1, other.whole.get(start)!);
      } else if (this.base === undefined || this.base === other.base) {
        this.base = other.base;
        this.push(code + 2 * skip, count - skip);
      } else {
        for (let seq = this.size; seq < start + count; seq++) this.push(WHOLE, 1, other.at(seq));
      }
    }
  }

  /** The item id base the log's item events follow (learnt from the first, or given), if any. */
  get itemIdBase(): string | undefined {
    return this.base;
  }

  /**
   * The codes of events [from, to) when every one is an item event kept as a number (what
   * RunFinal.itemCodes carries to domain/run-chunks.ts), else undefined.
   */
  itemCodes(from: number, to: number): number[] | undefined {
    const codes: number[] = [];
    for (let seq = from; seq < to;) {
      const [start, code, count] = this.segment(this.segmentOf(seq));
      if (code === WHOLE) return undefined;
      for (const end = Math.min(to, start + count); seq < end; seq++)
        codes.push(code + 2 * (seq - start));
    }
    return codes;
  }

  /** Every event, made whole (an operator's tool; a stream reads with `at`). */
  toArray(): RunEvent[] {
    return Array.from({ length: this.size }, (_, sequence) => this.at(sequence));
  }

  /** The code of an item event exactly as `itemEventOf` would make it again, else undefined. */
  private compactCode(event: RunEvent): number | undefined {
    if (event.type !== 'response.output_item.added' && event.type !== 'response.output_item.done')
      return undefined;
    const { item } = event;
    const plain =
      typeof item === 'object' &&
      item !== null &&
      Object.keys(event).length === 4 &&
      Object.keys(item).length === 3 &&
      item.type === 'message' &&
      item.phase === 'final_answer' &&
      Number.isSafeInteger(event.output_index) &&
      event.output_index >= 0;
    if (!plain) return undefined;
    // The base follows from the first item event's id and index; every later one must agree.
    this.base ??= idAtOffset(item.id, -event.output_index);
    return this.ids().at(event.output_index) === item.id ? itemCodeOf(event) : undefined;
  }

  /** The event at `sequence` (< length): kept whole, or an item event's code. */
  private lookup(sequence: number): RunEvent | number {
    if (!Number.isInteger(sequence) || sequence < 0 || sequence >= this.size)
      throw new RangeError(`no event ${sequence} in a log of ${this.size}`);
    const [start, code] = this.segment(this.segmentOf(sequence));
    return code === WHOLE ? this.whole.get(start)! : code + 2 * (sequence - start);
  }

  /** The id of the item of an item event's code. */
  private idAt(code: number): string {
    return this.ids().at(Math.floor(code / 2));
  }

  /** The base's id sequence; the base never changes once known. */
  private ids(): IdSequence {
    return (this.idSequence ??= new IdSequence(this.base!));
  }

  /** Appends `count` item events from `code` of the run whose item id base is `base`. */
  private pushCodes(base: string, code: number, count: number): void {
    // Another base than the log's (never within one run): kept whole rather than misnamed.
    this.base ??= base;
    if (this.base === base) this.push(code, count);
    else
      for (let k = 0; k < count; k++)
        this.push(WHOLE, 1, itemEventOf(base, code + 2 * k, this.size));
  }

  /** Adds `count` events: a whole one, or item events from `code` on, extending the last segment when they follow it. */
  private push(code: number, count: number, event?: RunEvent): void {
    if (count <= 0) return;
    const { segments } = this;
    const n = segments.length;
    if (event) this.whole.set(this.size, event);
    else if (n > 0 && segments[n - 2] !== WHOLE && segments[n - 2] + 2 * segments[n - 1] === code) {
      segments[n - 1] += count;
      this.size += count;
      return;
    }
    segments.push(this.size, code, count);
    this.size += count;
  }

  /** Segment `s`: its first sequence number, its first code (or WHOLE) and its count. */
  private segment(s: number): [start: number, code: number, count: number] {
    const { segments } = this;
    return [segments[s * 3], segments[s * 3 + 1], segments[s * 3 + 2]];
  }

  /** The index of the segment holding `sequence` (< length). */
  private segmentOf(sequence: number): number {
    const { segments } = this;
    // No closure here: this runs for every event a stream sends, and under tsx (`npm start`, the
    // bench) every function made is named (`__name`), which cost more than the rest of a read.
    if (this.holds(this.hint, sequence)) return this.hint;
    if (this.hint + 1 < this.segmentCount && this.holds(this.hint + 1, sequence))
      return ++this.hint;
    let low = 0;
    let high = this.segmentCount - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (segments[mid * 3] <= sequence) low = mid;
      else high = mid - 1;
    }
    this.hint = low;
    return low;
  }

  private holds(s: number, sequence: number): boolean {
    const { segments } = this;
    return segments[s * 3] <= sequence && sequence < segments[s * 3] + segments[s * 3 + 2];
  }
}

/** The (code, count) of each of `tokens` (comma-separated, see codeToken). */
function* parseTokens(tokens: string): Generator<[code: number, count: number]> {
  if (tokens === '') return;
  for (const token of tokens.split(',')) {
    const [code, count = 1] = token.split('*').map((part) => parseInt(part, 36));
    yield [code, count];
  }
}
