/**
 * A large run's end, cut into chunks that each fit one Temporal payload. Every activity input is a
 * payload of the workflow's history, refused above 2 MB (and the whole history above 50 MB), so a
 * 100,000-row run cannot hand its output and 200,000-event log to finalizeRun in one piece.
 *
 * Item events travel compactly: every event between `response.created` (first) and the terminal
 * event (last) is an output item's `added` or `done`, and an item's id follows from the run's
 * first item id and its output index (domain/ids.ts idAtOffset). So an event is one number,
 * `output_index * 2 + (done ? 1 : 0)` in base 36: ~6 bytes instead of ~150, and a 100,000-row
 * run's log is 1.3 MB instead of 30 MB. Consecutive items' events of one type (a block's rows, D35)
 * are one token `code*count`, so a 1,000,000-row run's log is a few KB. Small runs (nearly all)
 * stay one piece: `chunks` is empty.
 */
import { codeToken, itemCodeOf, itemEventOf, RunLog, runLength, type ItemEvent } from './run-log';
import type { OutputItem, RunEvent, RunFinal, RunOutput } from './run';

/** Upper bound of one chunk's JSON, well under Temporal's 2 MB payload limit (an item alone may exceed it), and two of them under its 4 MB message limit. */
export const CHUNK_BYTES = 512 * 1024;

/** One slice of a run's event log and output items, stored before the final record (store/runs.ts). */
export interface RunChunk {
  runId: string;
  /** 0-based; chunks are concatenated in this order: item events in log order, items per label in output order. */
  index: number;
  /** Item events, compact (see above), comma-separated; empty when the chunk holds none. */
  itemEvents: string;
  output: RunOutput;
}

/** The stored parts a final record is rebuilt from: the events it kept (created and terminal) and its item id base. */
export interface ChunkedRecord {
  events: RunEvent[] | null;
  output: RunOutput | null;
  item_id_base?: string | null;
}

/** A chunk as read back: compact item events, or (chunks stored by earlier versions) whole events. */
export type StoredChunk = Pick<RunChunk, 'index' | 'output'> & {
  itemEvents?: string;
  events?: RunEvent[];
};

/** Bytes of one item event in the JSON log, about: enough to tell a small run from a large one without serializing its log. */
const ITEM_EVENT_BYTES = 150;

/**
 * Splits a final state whose events and output exceed `maxBytes` into chunks; the final then
 * carries only its created and terminal events. It runs inside the workflow at the end of a
 * 100,000-row run, so it touches each item once and never serializes the whole log (Temporal
 * fails a workflow task that holds its thread for seconds).
 */
export function splitFinal(
  whole: RunFinal,
  maxBytes = CHUNK_BYTES,
): { final: RunFinal; chunks: RunChunk[] } {
  // D35: a big run's state hands its item events as numbers already (RunFinal.itemCodes).
  const { itemCodes, ...final } = whole;
  const inner = itemCodes ? [] : final.events.slice(1, -1);
  // Every event between the first and the last is an item event whose id RunState derived from the base.
  const compactable =
    final.itemIdBase !== undefined &&
    final.events.length >= 2 &&
    (itemCodes !== undefined || inner.every(isItemEvent));
  const innerCount = itemCodes?.length ?? inner.length;
  const items = Object.entries(final.output ?? {}).flatMap(([label, list]) =>
    list.map((item) => ({ label, item, bytes: JSON.stringify(item).length + 1 })),
  );
  const outputBytes = items.reduce((sum, entry) => sum + entry.bytes, 0);
  if (!compactable || innerCount * ITEM_EVENT_BYTES + outputBytes <= maxBytes) {
    if (!itemCodes) return { final: { ...final, chunks: 0 }, chunks: [] };
    const events: RunEvent[] = [final.events[0]];
    for (const code of itemCodes) events.push(itemEventOf(final.itemIdBase!, code, events.length));
    events.push({ ...final.events.at(-1)!, sequence_number: events.length });
    return { final: { ...final, events, chunks: 0 }, chunks: [] };
  }

  const chunks: RunChunk[] = [];
  const codes: string[][] = [];
  let bytes = maxBytes + 1; // the first piece opens a chunk
  const room = (needed: number): number => {
    if (bytes > 0 && bytes + needed > maxBytes) {
      chunks.push({ runId: final.runId, index: chunks.length, itemEvents: '', output: {} });
      codes.push([]);
      bytes = 0;
    }
    bytes += needed;
    return chunks.length - 1;
  };
  // D35: a run of events of one type for consecutive items (a block's rows) is one token, `code*n`.
  const logCodes = itemCodes ?? (inner as ItemEvent[]).map(itemCodeOf);
  for (let i = 0; i < logCodes.length;) {
    const count = runLength(logCodes, i);
    const token = codeToken(logCodes[i], count);
    codes[room(token.length + 1)].push(token);
    i += count;
  }
  for (const { label, item, bytes: needed } of items)
    (chunks[room(needed)].output[label] ??= [] as OutputItem[]).push(item);
  chunks.forEach((chunk, i) => (chunk.itemEvents = codes[i].join(',')));
  // The record keeps every label, so a label with no items still shows.
  const emptyOutput: RunOutput | null =
    final.output && Object.fromEntries(Object.keys(final.output).map((label) => [label, []]));
  const kept = [final.events[0], final.events.at(-1)!];
  return { final: { ...final, events: kept, output: emptyOutput, chunks: chunks.length }, chunks };
}

function isItemEvent(event: RunEvent): boolean {
  return event.type === 'response.output_item.added' || event.type === 'response.output_item.done';
}

/** The chunks in their order (the stored order of a query is not theirs). */
function inOrder<T extends { index: number }>(chunks: readonly T[]): T[] {
  return [...chunks].sort((a, b) => a.index - b.index);
}

/** A chunked record's output with the chunks' items joined in (the inverse of splitFinal's output part). */
export function joinOutput(
  record: Pick<ChunkedRecord, 'output'>,
  chunks: readonly Pick<StoredChunk, 'index' | 'output'>[],
): RunOutput | null {
  const output: RunOutput | null =
    record.output &&
    Object.fromEntries(Object.entries(record.output).map(([label, items]) => [label, [...items]]));
  for (const chunk of inOrder(chunks))
    for (const [label, items] of Object.entries(chunk.output))
      if (output) (output[label] ??= []).push(...items);
  return output;
}

/**
 * A chunked record's whole event log, compact (domain/run-log.ts): its first event, the chunks'
 * item events, its last event (the inverse of splitFinal's log part). A million rows' events stay
 * a few thousand numbers; none is made into an object here.
 */
export function logOfChunks(
  record: Pick<ChunkedRecord, 'events' | 'item_id_base'>,
  chunks: readonly Omit<StoredChunk, 'output'>[],
): RunLog {
  const kept = record.events ?? [];
  const log = RunLog.of(kept.slice(0, 1));
  for (const chunk of inOrder(chunks)) {
    for (const event of chunk.events ?? []) log.append(event); // written before item events were compact: whole events
    if (chunk.itemEvents) log.appendItemCodes(record.item_id_base!, chunk.itemEvents);
  }
  for (const event of kept.slice(1)) log.append({ ...event, sequence_number: log.length });
  return log;
}
