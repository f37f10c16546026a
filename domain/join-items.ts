/**
 * The `join` node (NODES.md): one item with the texts of its input joined by the separator and
 * every other part after them in order; a failed item once an input item failed. Fed item by item,
 * so a join of a stored list (D35, activities/stored-lists.ts) never holds the list itself.
 */
import type { Item, Part } from './parts';
import { completedOf, failed } from './items';

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
      this.failure = failed({
        message: `input item ${index} from node '${this.sourceId}' failed: ${item.error?.message ?? 'unknown error'}`,
        type: 'upstream_failed',
      });
      return false;
    }
    for (const part of item.parts) {
      if (part.type === 'text') this.texts.push(part.text);
      else this.others.push(part);
    }
    return true;
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

/** Join of an inline list. */
export function joinItems(
  node: { separator?: string },
  items: readonly Item[],
  sourceId: string,
): Item[] {
  const joiner = new Joiner(node.separator ?? '\n', sourceId);
  items.every((item, index) => joiner.add(item, index));
  return joiner.result();
}
