/**
 * D33: the text operators read in the Temporal UI: a run's static summary and details, its
 * current progress, and the summary of every activity and timer. Pure functions (deterministic,
 * no Temporal imports) so the workflow, the API and tests build the same strings. They name
 * node ids, node types, counts and ranges only, never a value, prompt, label or URL: user
 * metadata is meant to be readable by anyone who can open the UI.
 */

/** `1234567` → `1,234,567` (no Intl: the same output in every sandbox and locale). */
export function formatCount(n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A duration as operators write it: `1h`, `1h 30m`, `45s`, `250ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const units: Array<[string, number]> = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  const parts: string[] = [];
  let rest = Math.round(ms / 1000) * 1000;
  for (const [unit, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.join(' ');
}

/** The static summary of a run's workflow: `<slug> v<version>`. */
export function workflowSummary(slug: string, version: number): string {
  return `${slug} v${version}`;
}

/** The static summary of a run's webhook delivery (its child workflow, D20). */
export function webhookWorkflowSummary(runId: string): string {
  return `webhook of ${runId}`;
}

/** The static details of a run's workflow: its size by node type, e.g. `5 nodes: 2 llm, 1 http_request, 1 user_input, 1 user_result`. */
export function workflowDetails(nodes: ReadonlyArray<{ type: string }>): string {
  const byType = new Map<string, number>();
  for (const node of nodes) byType.set(node.type, (byType.get(node.type) ?? 0) + 1);
  const parts = [...byType]
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([type, n]) => `${n} ${type}`);
  return `${formatCount(nodes.length)} node${nodes.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
}

/** The part of a node's input an activity works on: one item, or a row range (first and last, inclusive). */
export type WorkRange = { item: number } | { rows: [number, number] };

/** `item 3`, or `rows 2,000–2,999`. */
export function formatRange(range: WorkRange): string {
  return 'item' in range
    ? `item ${formatCount(range.item)}`
    : `rows ${formatCount(range.rows[0])}–${formatCount(range.rows[1])}`;
}

/** An I/O node's activity: `summarize · llm · rows 2,000–2,999`. */
export function activitySummary(node: { id: string; type: string }, range: WorkRange): string {
  return `${node.id} · ${node.type} · ${formatRange(range)}`;
}

/** A file input being fetched and stored before the graph runs (D19): `photo · user_input · file`. */
export function fileInputSummary(nodeId: string): string {
  return `${nodeId} · user_input · file`;
}

/** The run's own timeout timer (D10): `run timeout 1h`. */
export function timerSummary(ms: number): string {
  return `run timeout ${formatDuration(ms)}`;
}

/** The activities around a run's graph. */
export const PERSISTENCE_SUMMARIES = {
  finalizeRun: 'finalize run record',
  saveRunChunk: (index: number, count: number) =>
    `save run record chunk ${formatCount(index + 1)}/${formatCount(count)}`,
  deliverWebhook: 'deliver webhook',
  recordWebhookGivenUp: 'record webhook given up',
  applyRetention: 'apply retention',
} as const;

export interface ProgressCounts {
  nodesDone: number;
  nodes: number;
  /** Iterations of I/O nodes finished, and known so far (a node's count is known once its inputs are). */
  itemsDone: number;
  items: number;
  /** The run's state once it has ended. */
  ended?: string;
}

/** A run's current details: `nodes 3/7 · items 1,234/10,000 · running`. */
export function progressDetails(p: ProgressCounts): string {
  return `nodes ${formatCount(p.nodesDone)}/${formatCount(p.nodes)} · items ${formatCount(p.itemsDone)}/${formatCount(p.items)} · ${p.ended ?? 'running'}`;
}

/**
 * How many item changes pass between two publications: every one below 1,000 items, then about
 * every 0.1–1% (10 at 1,000–9,999 items, 100 at 10,000–99,999 ...), so a 100,000-row run
 * rebuilds its details a few hundred times, not per row, and they are never more than 1% behind.
 */
export function progressStep(items: number): number {
  // Compared, not counted in digits: it runs once per item started and done, and making a string
  // of the count each time cost ~30 ms of a workflow task per 100,000 rows.
  let step = 1;
  for (let limit = 1000; Math.trunc(items) >= limit; limit *= 10) step *= 10;
  return step;
}

/**
 * Counts a run's progress and publishes its details (the workflow's setCurrentDetails): when a
 * node finishes, when the run ends, and every progressStep() items started or finished.
 * Deterministic: counts only, no clock.
 */
export class RunProgress {
  private readonly counts: ProgressCounts;

  constructor(
    nodes: number,
    private readonly publish: (details: string) => void,
  ) {
    this.counts = { nodesDone: 0, nodes, itemsDone: 0, items: 0 };
    this.flush();
  }

  /** An I/O iteration became known (it is waiting for a slot or running). */
  itemStarted(): void {
    this.counts.items++;
    if (this.counts.items % progressStep(this.counts.items) === 0) this.flush();
  }

  /** `n` I/O iterations became known at once (a big node's rows): one publication, not one per row. */
  itemsStarted(n: number): void {
    this.counts.items += n;
    this.flush();
  }

  itemDone(): void {
    this.counts.itemsDone++;
    const { itemsDone, items } = this.counts;
    if (itemsDone === items || itemsDone % progressStep(items) === 0) this.flush();
  }

  nodeDone(): void {
    this.counts.nodesDone++;
    this.flush();
  }

  /** The run has ended (`completed`, `failed`, `cancelled`). */
  ended(status: string): void {
    this.counts.ended = status;
    this.flush();
  }

  private flush(): void {
    this.publish(progressDetails(this.counts));
  }
}
