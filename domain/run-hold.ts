/**
 * The credit a run holds while it works (D17): its worst case as far as the start can know it,
 * from the graph, the inputs and the price table. Pure, so the API and tests compute the same.
 *
 * - The start fee, always.
 * - `image_generation` of a priced model: `per_image` × `n` per call, a true bound (the service
 *   bills the images made, at most `n`).
 * - `llm` and `model` calls of a priced model cost what the provider reports (tokens, seconds),
 *   unknown at start: each is held at `perCallUsd`, an estimate, not a bound.
 * - Calls per node follow the graph (docs/workflow-format.md "Values and iteration"): a batch of
 *   rows given in the node or in an input counts its rows; a node whose number of items is only
 *   known while the run works (a batch fed by a file or by another node, an llm's `list`) is held
 *   as one call.
 * - Unpriced models cost nothing (D17), so they hold nothing.
 * `exact` says whether the hold is a true bound (no estimate went into it).
 */
import type { GraphNode, WorkflowDocument } from './graph';
import { isFileReference } from './input-values';
import { normalizeLabel } from './labels';

/**
 * D36: the highest `max_cost` a start may name, USD (a million rows of long answers from a dear
 * model stay under it). A run with a cap holds the cap, and an account's holds and releases are
 * running sums of floats (store/credit-holds.ts): a cap of 1e14 or 1e308 would leave those sums
 * unable to tell cents apart, or infinite, and credit with them.
 */
export const MAX_COST_USD = 100_000;

/** The parts of a model's price (config `PRICES`) a hold looks at. */
export interface HoldPrice {
  input_per_mtok: number;
  output_per_mtok: number;
  per_image: number;
  per_second: number;
}

export interface HoldOptions {
  prices: Record<string, HoldPrice>;
  startFeeUsd: number;
  /** The hold of one call whose cost only the provider's answer tells (tokens, seconds). */
  perCallUsd: number;
}

export interface RunHold {
  usd: number;
  /** True when nothing in it is an estimate: the run cannot cost more. */
  exact: boolean;
}

/** The hold of a run of `graph` with `inputs` (validated). */
export function runHold(
  graph: WorkflowDocument,
  inputs: Record<string, unknown>,
  opts: HoldOptions,
): RunHold {
  const counts = itemCounts(graph, inputs);
  let usd = opts.startFeeUsd;
  let exact = true;
  for (const node of graph.nodes) {
    const perCall = callPrice(node, opts);
    if (perCall === null) continue;
    const calls = iterations(graph, node, counts);
    usd += perCall.usd * (calls ?? 1);
    if (!perCall.exact || calls === undefined) exact = false;
  }
  return { usd: Math.round(usd * 1e9) / 1e9, exact };
}

/**
 * D36 `max_cost`: what the run budgets one call (one row) of each priced node at before starting
 * it: the same per-call worst case as the hold (exact for images, `perCallUsd` for token- and
 * time-priced calls, raised by the workflow to the most a call of the node has cost so far).
 * Nodes that cost nothing are absent.
 */
export function callBudgets(graph: WorkflowDocument, opts: HoldOptions): Record<string, number> {
  const out: Record<string, number> = {};
  for (const node of graph.nodes) {
    const perCall = callPrice(node, opts);
    if (perCall !== null) out[node.id] = perCall.usd;
  }
  return out;
}

/**
 * D17: the model nodes whose model has no entry in `prices` (which would run free), each as its
 * node id and model: an operator who prices its models refuses these at a run's start.
 */
export function unpricedModels(
  graph: WorkflowDocument,
  prices: HoldOptions['prices'],
): Array<{ node: string; model: string }> {
  const out: Array<{ node: string; model: string }> = [];
  for (const node of graph.nodes) {
    const model =
      node.type === 'llm' || node.type === 'image_generation'
        ? node.model
        : node.type === 'model'
          ? (node.model ?? node.version)
          : undefined;
    if (model !== undefined && !Object.hasOwn(prices, model)) out.push({ node: node.id, model });
  }
  return out;
}

/** What one call of a node is held at, or null when it costs nothing. */
function callPrice(node: GraphNode, opts: HoldOptions): { usd: number; exact: boolean } | null {
  if (node.type === 'image_generation') {
    const perImage = opts.prices[node.model]?.per_image ?? 0;
    return perImage > 0 ? { usd: perImage * node.n, exact: true } : null;
  }
  if (node.type === 'llm') {
    const price = opts.prices[node.model];
    const priced = !!price && (price.input_per_mtok > 0 || price.output_per_mtok > 0);
    return priced ? { usd: opts.perCallUsd, exact: false } : null;
  }
  if (node.type === 'model') {
    const priced = (opts.prices[node.model ?? node.version ?? '']?.per_second ?? 0) > 0;
    return priced ? { usd: opts.perCallUsd, exact: false } : null;
  }
  return null;
}

/** Items on each node's output where the start can count them (absent: known only while the run works). */
function itemCounts(graph: WorkflowDocument, inputs: Record<string, unknown>): Map<string, number> {
  const counts = new Map<string, number>();
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const visiting = new Set<string>();
  const count = (id: string): number | undefined => {
    if (counts.has(id)) return counts.get(id);
    const node = byId.get(id);
    if (!node || visiting.has(id)) return undefined; // validated graphs have neither
    visiting.add(id);
    const result = countOf(node);
    visiting.delete(id);
    if (result !== undefined) counts.set(id, result);
    return result;
  };
  const countOf = (node: GraphNode): number | undefined => {
    switch (node.type) {
      case 'user_input':
      case 'select':
      case 'join':
        return 1;
      case 'user_result':
        return undefined;
      case 'batch': {
        const feed = graph.edges.find((e) => e.to === node.id && e.port === 'rows');
        if (!feed) return node.rows?.length;
        const source = byId.get(feed.from);
        return source?.type === 'user_input'
          ? rowsOf(inputs[normalizeLabel(source.label)])
          : undefined;
      }
      case 'llm':
        if (node.output === 'list') return undefined;
        return iterations(graph, node, counts, count);
      default:
        return iterations(graph, node, counts, count);
    }
  };
  for (const node of graph.nodes) count(node.id);
  return counts;
}

/** How often an item node runs: the longest of its inputs (one-item inputs go to every call); undefined when one is unknown. */
function iterations(
  graph: WorkflowDocument,
  node: GraphNode,
  counts: Map<string, number>,
  count: (id: string) => number | undefined = (id) => counts.get(id),
): number | undefined {
  let most = 1;
  for (const edge of graph.edges) {
    if (edge.to !== node.id) continue;
    const n = count(edge.from);
    if (n === undefined) return undefined;
    most = Math.max(most, n);
  }
  return most;
}

/** Rows a batch makes of an input value: an array's elements, or a text's non-blank lines; undefined for a file (D31). */
function rowsOf(value: unknown): number | undefined {
  if (Array.isArray(value)) return value.length;
  if (typeof value !== 'string') return undefined;
  const text = value;
  if (isFileReference(`${text}`) || text.trim().startsWith('[')) return undefined;
  let lines = 0;
  for (const line of text.split(/\r?\n/)) if (line.trim() !== '') lines++;
  return lines;
}
