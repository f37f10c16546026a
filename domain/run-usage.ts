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
}

/** A block's tally (D35): the usage of its stored rows and how many of their items completed or failed. */
export interface BlockUsage extends CallUsage {
  completed: number;
  failed: number;
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
