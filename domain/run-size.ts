/**
 * D31 limits known before a run starts: a list of more rows than a run takes inline would end the
 * run (or its worker) anyway, so a start that clearly carries one is refused at once
 * (`run_too_large`) instead of being billed a start fee for a run that must fail. Rows that only appear while the run works
 * (an llm's list output, a file read by a node) are checked by the run itself.
 */
import type { WorkflowDocument } from './graph';
import { normalizeLabel } from './labels';

/** Rows per list node and items per output at most (D31). */
export const MAX_ROWS = 1_000_000;

/** Why a list node of `rows` rows fails (`more`: it stopped counting there). */
export function tooManyRows(rows: number, more = false): string {
  return `has ${more ? 'more than ' : ''}${rows} rows; a run takes at most ${MAX_ROWS} per list (D31)`;
}

/**
 * Rows per list given in the request or written in the workflow at most: they are made into items
 * in the run's workflow code, one task, so 480,000 of them (a 1 MiB body of `0,`s) held that task
 * past 5 s, where the SDK's deadlock detector aborts the whole worker. More rows come as a file
 * (D31), read by activities, up to MAX_ROWS.
 */
export const INLINE_MAX_ROWS = 100_000;

/** The batch nodes whose rows are known at start (inline) and number more than INLINE_MAX_ROWS, with their counts. */
export function oversizedBatches(
  graph: WorkflowDocument,
  inputs: Record<string, unknown>,
): Array<{ nodeId: string; rows: number }> {
  const inputKeyOf = new Map(
    graph.nodes.flatMap((n) =>
      n.type === 'user_input' ? [[n.id, normalizeLabel(n.label)] as const] : [],
    ),
  );
  const found: Array<{ nodeId: string; rows: number }> = [];
  for (const node of graph.nodes) {
    if (node.type !== 'batch') continue;
    const feed = graph.edges.find((edge) => edge.to === node.id && edge.port === 'rows');
    let rows: number | undefined = feed ? undefined : node.rows?.length;
    const key = feed && inputKeyOf.get(feed.from);
    if (key !== undefined) rows = countRows(inputs[key]);
    if (rows !== undefined && rows > INLINE_MAX_ROWS) found.push({ nodeId: node.id, rows });
  }
  return found;
}

/** Rows a batch node makes of an input value: an array's elements (also as JSON text), or a text's non-blank lines. */
function countRows(value: unknown): number | undefined {
  if (Array.isArray(value)) return value.length;
  if (typeof value !== 'string') return undefined;
  if (value.trim().startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(value);
      return Array.isArray(parsed) ? parsed.length : undefined;
    } catch {
      return undefined; // not JSON: the run says so
    }
  }
  let lines = 0;
  for (const line of value.split(/\r?\n/)) if (line.trim() !== '') lines++;
  return lines;
}
