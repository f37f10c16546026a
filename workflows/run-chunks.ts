/**
 * A large run's end, cut into chunks that each fit one Temporal payload. Every activity input is a
 * payload of the workflow's history, refused above 2 MB (and the whole message above 4 MB), so a
 * 10,000-row batch cannot hand its output and ~20,000-event log to finalizeRun in one piece
 * (bench/FINDINGS.md P4). Small runs (nearly all) stay one piece: `chunks` is empty.
 */
import type { OutputItem, RunEvent, RunFinal, RunOutput } from './definitions';

/** Upper bound of one chunk's JSON, well under Temporal's 2 MB payload limit (an item alone may exceed it). */
export const CHUNK_BYTES = 256 * 1024;

/** One slice of a run's event log and output items, stored before the final record (store/runs.ts). */
export interface RunChunk {
  runId: string;
  /** 0-based; chunks are concatenated in this order: events in log order, items per label in output order. */
  index: number;
  events: RunEvent[];
  output: RunOutput;
}

/** Splits a final state whose events and output exceed `maxBytes` into chunks; the final then carries none of them. */
export function splitFinal(final: RunFinal, maxBytes = CHUNK_BYTES): { final: RunFinal; chunks: RunChunk[] } {
  const size = (value: unknown) => JSON.stringify(value).length;
  if (size(final.events) + size(final.output) <= maxBytes) return { final: { ...final, chunks: 0 }, chunks: [] };

  const chunks: RunChunk[] = [];
  let current: RunChunk | undefined;
  let bytes = 0;
  const room = (needed: number): RunChunk => {
    if (!current || (bytes > 0 && bytes + needed > maxBytes)) {
      current = { runId: final.runId, index: chunks.length, events: [], output: {} };
      chunks.push(current);
      bytes = 0;
    }
    bytes += needed;
    return current;
  };
  // +1: the comma between elements.
  for (const event of final.events) room(size(event) + 1).events.push(event);
  const emptyOutput: RunOutput | null = final.output && {};
  for (const [label, items] of Object.entries(final.output ?? {})) {
    emptyOutput![label] = []; // the record keeps every label, so a label with no items still shows
    for (const item of items) (room(size(item) + 1).output[label] ??= [] as OutputItem[]).push(item);
  }
  return { final: { ...final, events: [], output: emptyOutput, chunks: chunks.length }, chunks };
}

/** Puts the chunks back into the final record's `events` and `output` (the inverse of splitFinal). */
export function joinChunks<T extends { events: RunEvent[] | null; output: RunOutput | null }>(record: T, chunks: readonly RunChunk[]): T {
  const events = [...(record.events ?? [])];
  const output: RunOutput | null = record.output && Object.fromEntries(Object.entries(record.output).map(([label, items]) => [label, [...items]]));
  for (const chunk of [...chunks].sort((a, b) => a.index - b.index)) {
    events.push(...chunk.events);
    for (const [label, items] of Object.entries(chunk.output)) if (output) (output[label] ??= []).push(...items);
  }
  return { ...record, events, output };
}
