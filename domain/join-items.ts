/**
 * The `join` node (NODES.md): one item with the texts of its input joined by the separator and
 * every other part after them in order; a failed item once an input item failed. Fed item by item,
 * so a join of a stored list (D35, activities/stored-lists.ts) never holds the list itself.
 */
import type { Item, Part } from './parts';
import { completedOf, failed, upstreamFailed } from './items';
import { INLINE_ROW_MAX_BYTES } from './item-blocks';

export class Joiner {
  private readonly texts: string[] = [];
  private readonly others: Part[] = [];
  private failure: Item | undefined;

  constructor(
    private readonly separator: string,
    /** The node feeding the join, named by a failed input's message. */
    private readonly sourceId: string,
  ) {}

  /** Takes the input item at `index`; false once the outcome is settled (an input item failed). */
  add(item: Item, index: number): boolean {
    if (this.failure) return false;
    if (item.status === 'failed') {
      this.failure = upstreamFailed(
        `input item ${index} from node '${this.sourceId}'`,
        item.error?.message,
      );
      return false;
    }
    for (const part of item.parts) {
      if (part.type === 'text') this.texts.push(part.text);
      else this.others.push(part);
    }
    return true;
  }

  /** The characters of the joined text: the texts and the separators between them. */
  textLength(): number {
    if (this.texts.length === 0) return 0;
    let length = this.separator.length * (this.texts.length - 1);
    for (const text of this.texts) length += text.length;
    return length;
  }

  /** The join's one item. */
  result(): Item[] {
    if (this.failure) return [this.failure];
    const parts: Part[] =
      this.texts.length > 0
        ? [{ type: 'text', text: this.texts.join(this.separator) }, ...this.others]
        : this.others;
    return [completedOf(parts)];
  }
}

/**
 * Join of an inline list. Its item is handed on through the run, so (with `bounded`, a patch asked
 * only then) a text past INLINE_ROW_MAX_BYTES fails it in place, unbuilt: a long separator between
 * many rows (1,000 × 400 KB) made a string that took the worker's thread past its deadlock timeout.
 */
export function joinItems(
  node: { separator?: string },
  items: readonly Item[],
  sourceId: string,
  bounded?: () => boolean,
): Item[] {
  const joiner = new Joiner(node.separator ?? '\n', sourceId);
  items.every((item, index) => joiner.add(item, index));
  const length = joiner.textLength();
  if (length > INLINE_ROW_MAX_BYTES && bounded?.())
    return [
      failed({
        message: `the joined text would be ${length} characters, over the ${INLINE_ROW_MAX_BYTES} an item handed on through the run holds: join fewer rows, or with a shorter separator`,
        type: 'template_too_large',
      }),
    ];
  return joiner.result();
}
