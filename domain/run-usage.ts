/**
 * D36 `usage`: what a run used, as the provider reported it (calls, tokens) and per I/O node
 * (calls, tokens, cost, items completed and failed). Summed by the workflow from its activities'
 * answers, kept on the final record, and shown on every read of the run. Pure and free of imports,
 * so the workflow sandbox can use it (its schema for the API is in domain/run-view.ts).
 */
export interface NodeUsage {
  provider_calls: number;
  input_tokens: number;
  output_tokens: number;
  /** USD, by the price table (D17). */
  cost: number;
  items_completed: number;
  items_failed: number;
}

export interface RunUsage {
  provider_calls: number;
  input_tokens: number;
  output_tokens: number;
  /** Per I/O node of the graph, by node id. */
  by_node: Record<string, NodeUsage>;
}

/** What one finished row (one provider call) used; absent on answers recorded before D36 (count as nothing). */
export interface CallUsage {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  /**
   * Calls made for the row before the one that ended it: attempts that failed (408, 429, 5xx, a
   * timeout, the network) or were cut off, then tried again. Counted in `provider_calls`, never
   * billed, and kept apart from `calls` so a node's per-call cost (D36 max_cost) is the answered
   * calls'. Absent when none (and in answers recorded before).
   */
  failed_calls?: number;
}

/** The calls a row's or a unit's usage counts: the answered or refused ones and the failed ones. */
export function callsMade(usage: CallUsage | undefined): number {
  return (usage?.calls ?? 0) + (usage?.failed_calls ?? 0);
}

/**
 * D36: what a unit (a chunk, a block) made that the rows of its answer do not count, carried as
 * `{ uncounted: CallUsage }`: an element of the details of its failure (the node gave up), or a
 * field of its last checkpoint (the `lastHeartbeatDetails` of a timeout). Undefined when absent or
 * not of that shape (answers recorded before).
 */
export function uncountedIn(value: unknown): CallUsage | undefined {
  const holders = Array.isArray(value) ? value : [value];
  for (const holder of holders) {
    const usage = (holder as { uncounted?: Partial<CallUsage> } | null)?.uncounted;
    if (typeof usage !== 'object' || usage === null) continue;
    const count = (n: unknown) =>
      Number.isSafeInteger(n) && (n as number) > 0 ? (n as number) : 0;
    return {
      calls: count(usage.calls),
      input_tokens: count(usage.input_tokens),
      output_tokens: count(usage.output_tokens),
      failed_calls: count(usage.failed_calls),
    };
  }
  return undefined;
}

/** A block's tally (D35): the usage of its stored rows and how many of their items completed or failed. */
export interface BlockUsage extends CallUsage {
  completed: number;
  failed: number;
}

/**
 * A block's tally as its node's usage, as the workflow counts a block's answer: its rows' calls
 * with their failed ones, tokens, cost and items (the API's settle of a block that never answered).
 */
export function blockNodeUsage(costUsd: number, usage: BlockUsage): NodeUsage {
  return {
    provider_calls: callsMade(usage),
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    cost: costUsd,
    items_completed: usage.completed,
    items_failed: usage.failed,
  };
}

/** `usage` with `more` added to node `nodeId`'s, and to the totals. */
export function addNodeUsage(usage: RunUsage, nodeId: string, more: NodeUsage): RunUsage {
  const node = usage.by_node[nodeId] ?? emptyNodeUsage();
  const sum = { ...node };
  for (const key of Object.keys(more) as Array<keyof NodeUsage>) sum[key] += more[key];
  return totalUsage({ ...usage.by_node, [nodeId]: sum });
}

export function emptyNodeUsage(): NodeUsage {
  return {
    provider_calls: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost: 0,
    items_completed: 0,
    items_failed: 0,
  };
}

/** The usage of a run before anything ran, or of a run recorded before D36. */
export function emptyUsage(nodeIds: readonly string[] = []): RunUsage {
  return {
    provider_calls: 0,
    input_tokens: 0,
    output_tokens: 0,
    by_node: Object.fromEntries(nodeIds.map((id) => [id, emptyNodeUsage()])),
  };
}

/** The run's totals from its nodes; costs rounded like total_cost (float sums drift). */
export function totalUsage(byNode: Record<string, NodeUsage>): RunUsage {
  const out = emptyUsage();
  for (const [id, node] of Object.entries(byNode)) {
    out.provider_calls += node.provider_calls;
    out.input_tokens += node.input_tokens;
    out.output_tokens += node.output_tokens;
    out.by_node[id] = { ...node, cost: Math.round(node.cost * 1e9) / 1e9 };
  }
  return out;
}
