/** How items flow between nodes: turning parts into template text and building items (docs/workflow-format.md "Values and iteration"). */
import type { Item, ItemError, Part } from './parts';

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
  return { status: 'completed', parts };
}

/** A failed item; failed items keep their place in every list (docs/workflow-format.md "Values and iteration"). */
export function failed(error: ItemError): Item {
  return { status: 'failed', parts: [], error };
}

/** One part for a JSON-ish value: strings stay text, everything else is a json part. */
export function valuePart(value: unknown): Part {
  return typeof value === 'string' ? { type: 'text', text: value } : { type: 'json', data: value };
}
