/**
 * D35: the results file as CSV (`Accept: text/csv`), for the spreadsheets big runs come from. One
 * line per item, in output order, under the header `item_index,id,status,output,error`
 * (RFC 4180: CRLF line ends, a field with a comma, quote or line break quoted, quotes doubled).
 * `item_index` is the item's row, so the column lines up with the sheet the rows came from.
 *
 * `output` is the item's parts as text: a text part as it is, a JSON string as it is and other JSON
 * as JSON, a file (image, video, file) as its link; several parts one per line. `error` is a failed
 * item's message. Model answers are untrusted: a field that begins with `=`, `+`, `-`, `@`, a tab
 * or a carriage return gets a leading `'`, so a spreadsheet shows it as text instead of evaluating
 * it as a formula (OWASP's CSV injection advice); the JSON Lines file is the exact one.
 */
import type { OutputItem } from '../../domain/run';
import type { Part } from '../../domain/parts';
import { inPieces } from './results-pieces';

export const CSV_HEADER = 'item_index,id,status,output,error\r\n';

/** Items as CSV lines under the header, in pieces of ~64 KB (one write each). */
export function itemCsv(items: AsyncIterable<OutputItem>): AsyncGenerator<string> {
  return inPieces(items, csvLine, CSV_HEADER);
}

/** One item's line. */
export function csvLine(item: OutputItem): string {
  const output = item.parts.map(partText).join('\n');
  return `${item.item_index},${item.id},${item.status},${field(output)},${field(item.error?.message ?? '')}\r\n`;
}

function partText(part: Part): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'json':
      return typeof part.data === 'string' ? part.data : JSON.stringify(part.data);
    default:
      return part.url;
  }
}

/** A field as RFC 4180 writes it, defused as a formula first. */
function field(text: string): string {
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
