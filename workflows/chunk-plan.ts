/**
 * How an I/O node's iterations are cut into activities (D31, docs/architecture.md "Big runs").
 *
 * A small node (up to twice the run's concurrency) runs one activity per row, as before: each
 * item streams the moment it is done. A larger one runs chunks of many rows, each chunk running
 * half the run's concurrency of provider calls at once, so two chunks overlap and the short gap
 * while one chunk's answer travels through the workflow is covered by the other. A 100,000-row
 * node becomes 200 chunks (about 1,200 history events instead of 300,000 for one activity per
 * row), and every chunk's input stays far below Temporal's 2 MB payload limit.
 */
import type { NodeRow } from '../activities/types';

/** Rows of one chunk at most: its answer (items of ~100 bytes) stays small, its progress streams often. */
export const MAX_CHUNK_ROWS = 500;
/** JSON bytes of one chunk's rows at most (the input payload; Temporal refuses payloads over 2 MB). */
export const MAX_CHUNK_INPUT_BYTES = 512 * 1024;

/** One planned activity: its rows and the run slots (parallel provider calls) it holds. */
export interface PlannedChunk {
  rows: NodeRow[];
  slots: number;
}

/** Cuts a node's pending rows into chunks, in row order. */
export function planChunks(rows: NodeRow[], concurrency: number): PlannedChunk[] {
  if (rows.length <= 2 * concurrency) return rows.map((row) => ({ rows: [row], slots: 1 }));
  const inner = Math.max(1, Math.ceil(concurrency / 2));
  const target = Math.min(MAX_CHUNK_ROWS, Math.max(2 * inner, Math.ceil(rows.length / 16)));
  const chunks: PlannedChunk[] = [];
  let current: NodeRow[] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = JSON.stringify(row).length + 1;
    // The first chunk is half the size, so the two chunks in flight end at different times and one
    // runs while the other's answer travels through the workflow (in step, both would wait at once).
    const limit = chunks.length === 0 ? Math.ceil(target / 2) : target;
    if (current.length > 0 && (current.length >= limit || bytes + size > MAX_CHUNK_INPUT_BYTES)) {
      chunks.push({ rows: current, slots: Math.min(inner, current.length) });
      current = [];
      bytes = 0;
    }
    current.push(row);
    bytes += size;
  }
  if (current.length > 0) chunks.push({ rows: current, slots: Math.min(inner, current.length) });
  return chunks;
}
