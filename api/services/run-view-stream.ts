/**
 * D31: a finished big run's view as a JSON byte stream. The record holds every output label (with
 * no items) and its chunks hold the items, label by label in output order, so the answer is written
 * as the chunks are read: one chunk (about 1 MB) in memory at a time, whatever the run's size.
 */
import { Readable } from 'node:stream';
import type { Collections } from '../../store/db';
import type { RunDoc, WebhookDeliveryDoc } from '../../store/documents';
import { runView } from '../../domain/run-view';
import { chunksOf } from '../../store/runs';

const OUTPUT_MARK = '\u0000output\u0000';

/** The run view of a finalized, chunked record, streamed. */
export function streamRunView(
  collections: Pick<Collections, 'runChunks'>,
  doc: RunDoc,
  delivery?: WebhookDeliveryDoc | null,
): Readable {
  return Readable.from(render(collections, doc, delivery), { objectMode: false });
}

async function* render(
  collections: Pick<Collections, 'runChunks'>,
  doc: RunDoc,
  delivery?: WebhookDeliveryDoc | null,
): AsyncGenerator<string> {
  const view = runView(doc, undefined, delivery);
  if (view.output === null) return yield JSON.stringify(view);
  const text = JSON.stringify({ ...view, output: OUTPUT_MARK });
  const at = text.indexOf(JSON.stringify(OUTPUT_MARK));
  yield `${text.slice(0, at)}{`;
  const labels = Object.keys(view.output);
  let open = -1; // index of the label whose array is open
  let first = true; // no item written yet in the open array
  const openUpTo = function* (index: number): Generator<string> {
    while (open < index) {
      if (open >= 0) yield ']';
      open++;
      yield `${open > 0 ? ',' : ''}${JSON.stringify(labels[open])}:[`;
      first = true;
    }
  };
  for await (const chunk of chunksOf(collections, doc)) {
    let piece = '';
    for (const [label, items] of Object.entries(chunk.output)) {
      const index = labels.indexOf(label);
      if (index < open || index < 0) continue; // cannot happen: chunks keep output order
      for (const part of openUpTo(index)) piece += part;
      for (const item of items) {
        piece += `${first ? '' : ','}${JSON.stringify(item)}`;
        first = false;
      }
    }
    if (piece) yield piece;
  }
  let tail = '';
  for (const part of openUpTo(labels.length - 1)) tail += part;
  yield `${tail}${labels.length > 0 ? ']' : ''}}${text.slice(at + JSON.stringify(OUTPUT_MARK).length)}`;
}
