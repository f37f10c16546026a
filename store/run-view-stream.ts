/**
 * D31: a finished big run's view (the JSON of GET /api/v1/runs/{id}) as a byte stream, for the
 * API's answers and the worker's webhook body. The record holds every output label (with no items)
 * and its chunks hold the items, label by label in output order, so the JSON is written as the
 * chunks are read: one chunk (about 1 MB) in memory at a time, whatever the run's size. A stored
 * output's items (D35) are read from its blocks, one block at a time.
 */
import { Readable } from 'node:stream';
import type { Collections } from './db';
import type { RunDoc, WebhookDeliveryDoc } from './documents';
import { runView } from '../domain/run-view';
import { chunksOf } from './runs';
import { storedItems } from './item-blocks';
import type { StoredChunk } from '../domain/run-chunks';

const OUTPUT_MARK = '\u0000output\u0000';

/** D31/D35: a run whose items are kept outside its record (chunks or stored outputs): its view is streamed. */
export const isBigRun = (doc: Pick<RunDoc, 'chunks' | 'stored_outputs'>): boolean =>
  !!doc.chunks || !!doc.stored_outputs;

/** The run view of a finalized, chunked record (its head: findRunHead), streamed. */
export function streamRunView(
  collections: Pick<Collections, 'runChunks' | 'itemBlocks'>,
  doc: RunDoc,
  delivery?: WebhookDeliveryDoc | null,
): Readable {
  return Readable.from(runViewParts(collections, doc, delivery), { objectMode: false });
}

/** The same JSON as its parts, in order (each at most ~64 KB beyond one item); each call reads the store anew. */
export async function* runViewParts(
  collections: Pick<Collections, 'runChunks' | 'itemBlocks'>,
  doc: RunDoc,
  delivery?: WebhookDeliveryDoc | null,
): AsyncGenerator<string> {
  const view = runView(doc, undefined, delivery, Date.now());
  if (view.output === null) return yield JSON.stringify(view);
  const text = JSON.stringify({ ...view, output: OUTPUT_MARK });
  const at = text.indexOf(JSON.stringify(OUTPUT_MARK));
  yield `${text.slice(0, at)}{`;
  const labels = Object.keys(view.output);
  const stored = doc.stored_outputs ?? {};
  // Chunks hold the items of the labels that are not stored, label by label in output order.
  const chunks = chunksOf(collections, doc)[Symbol.asyncIterator]();
  let current: StoredChunk | null | undefined; // undefined: the next is not read yet; null: none left
  for (let i = 0; i < labels.length; i++) {
    const label = labels[i];
    let piece = `${i > 0 ? ',' : ''}${JSON.stringify(label)}:[`;
    let first = true;
    const add = (item: unknown) => {
      piece += `${first ? '' : ','}${JSON.stringify(item)}`;
      first = false;
    };
    const ref = stored[label];
    if (ref && doc.item_id_base) {
      // D35: read from its blocks, one block in memory at a time.
      for await (const item of storedItems(collections, doc._id, doc.item_id_base, ref, 0, false)) {
        add(item);
        if (piece.length >= 64 * 1024) {
          yield piece;
          piece = '';
        }
      }
    } else {
      for (const item of view.output[label]) add(item);
      for (;;) {
        if (current === undefined) {
          const next = await chunks.next();
          current = next.done ? null : next.value;
        }
        if (!current) break;
        for (const item of current.output[label] ?? []) add(item);
        const later = Object.keys(current.output).some((l) => labels.indexOf(l) > i);
        if (later) break; // the chunk goes on with the next labels
        if (piece) yield piece;
        piece = '';
        current = undefined;
      }
    }
    yield `${piece}]`;
  }
  yield `}${text.slice(at + JSON.stringify(OUTPUT_MARK).length)}`;
}
