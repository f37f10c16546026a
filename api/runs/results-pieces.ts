/** D35: a results file's text from its items, in pieces of ~64 KB (one socket write each), whatever the format. */
import type { OutputItem } from '../../domain/run';

const PIECE_CHARS = 64 * 1024;

/** `head`, then each item's `line`, gathered into pieces of ~64 KB; `head` alone when there is no item. */
export async function* inPieces(
  items: AsyncIterable<OutputItem>,
  line: (item: OutputItem) => string,
  head = '',
): AsyncGenerator<string> {
  let piece = head;
  for await (const item of items) {
    piece += line(item);
    if (piece.length >= PIECE_CHARS) {
      yield piece;
      piece = '';
    }
  }
  if (piece) yield piece;
}
