/** How items flow between nodes: turning parts into template text and building items (docs/workflow-format.md "Values and iteration"). */
import type { Item, ItemError, Part } from './parts';
import { renderTemplate, type TemplateLookup } from './templates';

/** The text a template placeholder receives for one item: texts as-is, JSON serialized, files by URL. */
export function itemText(item: Item): string {
  return item.parts.map(partText).join('\n');
}

function partText(part: Part): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'json':
      return JSON.stringify(part.data); // docs/workflow-format.md: json parts render as JSON
    default:
      return part.url;
  }
}

/** A completed item holding the given parts. */
export function completed(...parts: Part[]): Item {
  return completedOf(parts);
}

/** A completed item holding a list of parts (a spread of a provider's 200,000 outputs overflowed the stack). */
export function completedOf(parts: Part[]): Item {
  return { status: 'completed', parts };
}

/** A failed item; failed items keep their place in every list (docs/workflow-format.md "Values and iteration"). */
export function failed(error: ItemError): Item {
  return { status: 'failed', parts: [], error };
}

/** The most characters of an `upstream_failed` message: a chain of 500 nodes added a prefix each. */
const UPSTREAM_MESSAGE_MAX = 1_000;

/**
 * The item of a row whose input failed: `where` (which input, from which node) and the input's own
 * message, whose end (the first cause) is kept when the two pass UPSTREAM_MESSAGE_MAX.
 */
export function upstreamFailed(where: string, reason = 'unknown error'): Item {
  const message = `${where} failed: ${reason}`;
  return failed({
    message:
      message.length <= UPSTREAM_MESSAGE_MAX
        ? message
        : `${where} failed: …${reason.slice(-(UPSTREAM_MESSAGE_MAX - where.length - 10))}`,
    type: 'upstream_failed',
  });
}

/** One part for a JSON-ish value: strings stay text, everything else is a json part. */
export function valuePart(value: unknown): Part {
  return typeof value === 'string' ? { type: 'text', text: value } : { type: 'json', data: value };
}

/**
 * An item as a block's input carries it (D35): a completed item of one text part is its text, of
 * one JSON part its data wrapped in a one-element array, any other item itself. A list that came
 * with the request (a `batch` of its rows) reaches its blocks through Temporal's history; as items
 * each row took ~60 bytes more than its value (a 1 MiB body of 500,000 short rows: ~30 MB of
 * history), packed about its value's size.
 */
export type PackedItem = string | [unknown] | Item;

/** The item as a block's input carries it (see PackedItem). */
export function packItem(item: Item): PackedItem {
  if (item.status !== 'completed' || item.parts.length !== 1 || 'error' in item) return item;
  const [part] = item.parts;
  if (part.type === 'text' && Object.keys(part).length === 2) return part.text;
  if (part.type === 'json' && part.data !== undefined && Object.keys(part).length === 2)
    return [part.data];
  return item;
}

/** The item a packed one stands for: `unpackItem(packItem(item))` equals `item`. */
export function unpackItem(packed: PackedItem): Item {
  if (typeof packed === 'string') return completed({ type: 'text', text: packed });
  if (Array.isArray(packed)) return completed({ type: 'json', data: packed[0] });
  return packed;
}

/**
 * What a template's placeholders render for one iteration's port items: `{{ row }}` the item's
 * text, `{{ row.name }}` the value at that path inside the item's JSON (its one json part), a
 * string as it is and anything else as JSON; a path that leads nowhere (or into an item that is not
 * JSON) renders empty. Own properties only, at every step.
 */
export function itemLookup(ports: Record<string, Item>): TemplateLookup {
  return (port, path) => {
    if (!Object.prototype.hasOwnProperty.call(ports, port)) return '';
    const item = ports[port];
    if (path.length === 0) return itemText(item);
    const [part] = item.parts;
    let value: unknown = item.parts.length === 1 && part.type === 'json' ? part.data : undefined;
    for (const key of path) {
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return '';
      // An array's own `length` is no key of the JSON: only its indexes are.
      if (Array.isArray(value) && !/^\d+$/.test(key)) return '';
      value = (value as Record<string, unknown>)[key];
    }
    return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  };
}

/**
 * The `text` node's one item: its template filled from one iteration's port items. Throws
 * TemplateTooLarge when the text would pass `maxLength` (domain/item-blocks.ts boundedTextItem).
 */
export function textItem(
  node: { template: string },
  ports: Record<string, Item>,
  maxLength = Infinity,
): Item {
  return completed({
    type: 'text',
    text: renderTemplate(node.template, itemLookup(ports), maxLength),
  });
}
