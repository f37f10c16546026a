/**
 * Executes a published graph inside the workflow: every node starts as soon as its inputs are
 * ready (independent branches run in parallel), item nodes iterate over their inputs
 * (docs/workflow-format.md "Values and iteration"), and failed items keep their place.
 */
import type { GraphEdge, GraphNode, WorkflowDocument } from '../domain/graph';
import type { Item } from '../domain/parts';
import { normalizeLabel } from '../domain/labels';
import { NodeFailure } from './errors';
import { batchItems, joinItems, selectItems, textItem, userInputItems } from './pure-nodes';
import { failed } from './values';

export type IoNode = Extract<GraphNode, { type: 'llm' | 'http_request' | 'image_generation' | 'model' }>;

/** What the engine needs from the workflow around it. */
export interface EngineHooks {
  /** Runs one iteration of an I/O node (as an activity) and returns the items it produced. */
  runIoNode(node: IoNode, iteration: number, ports: Record<string, Item>): Promise<Item[]>;
  /** An iteration of a node began doing work (only I/O nodes report this). */
  onIterationStart(nodeId: string, iteration: number): void;
  /** An iteration of a node produced its items; list and pure nodes report all items as iteration 0. */
  onIterationDone(nodeId: string, iteration: number, items: Item[]): void;
}

const IO_TYPES = new Set(['llm', 'http_request', 'image_generation', 'model']);

/** True for nodes that run as activities. */
export function isIoNode(node: GraphNode): node is IoNode {
  return IO_TYPES.has(node.type);
}

/** Runs the whole graph; resolves with every node's items, rejects with a NodeFailure when a node cannot run. */
export async function executeGraph(
  graph: WorkflowDocument,
  inputs: Record<string, unknown>,
  hooks: EngineHooks,
): Promise<Map<string, Item[]>> {
  const nodes = new Map(graph.nodes.map((node) => [node.id, node]));
  const incoming = new Map<string, GraphEdge[]>();
  for (const edge of graph.edges) {
    const list = incoming.get(edge.to) ?? [];
    list.push(edge);
    incoming.set(edge.to, list);
  }
  const results = new Map<string, Promise<Item[]>>();

  const evaluate = (id: string): Promise<Item[]> => {
    let result = results.get(id);
    if (!result) {
      result = run(nodes.get(id)!);
      results.set(id, result);
    }
    return result;
  };

  async function run(node: GraphNode): Promise<Item[]> {
    const edges = incoming.get(node.id) ?? [];
    const ports: Record<string, Item[]> = {};
    const sources: Record<string, string> = {};
    await Promise.all(
      edges.map(async (edge) => {
        const port = edge.port ?? 'in';
        ports[port] = await evaluate(edge.from);
        sources[port] = edge.from;
      }),
    );
    const items = await runNode(node, ports, sources);
    if (!isIoNode(node) && node.type !== 'text') hooks.onIterationDone(node.id, 0, items);
    return items;
  }

  async function runNode(node: GraphNode, ports: Record<string, Item[]>, sources: Record<string, string>): Promise<Item[]> {
    switch (node.type) {
      case 'user_input':
        return userInputItems(node, inputs[normalizeLabel(node.label)]);
      case 'user_result':
        return ports.in ?? [];
      case 'batch':
        return batchItems(node, ports.rows);
      case 'select':
        return selectItems(node, ports.in ?? []);
      case 'join':
        return joinItems(node, ports.in ?? [], sources.in);
      case 'text':
        return iterate(node, ports, sources, hooks, async (_, row) => [textItem(node, row)]);
      default:
        return iterate(node, ports, sources, hooks, async (i, row) => {
          hooks.onIterationStart(node.id, i);
          return hooks.runIoNode(node, i, row);
        });
    }
  }

  await Promise.all(graph.nodes.map((node) => evaluate(node.id)));
  const out = new Map<string, Item[]>();
  for (const [id, promise] of results) out.set(id, await promise);
  return out;
}

type Iteration = (index: number, row: Record<string, Item>) => Promise<Item[]>;

/**
 * Zips the port lists by index (single items broadcast to every iteration, unequal lengths
 * fail the node) and runs each iteration; a failed input item short-circuits to a failed item.
 */
async function iterate(
  node: GraphNode,
  ports: Record<string, Item[]>,
  sources: Record<string, string>,
  hooks: EngineHooks,
  body: Iteration,
): Promise<Item[]> {
  const names = Object.keys(ports);
  const lengths = [...new Set(names.map((p) => ports[p].length).filter((n) => n !== 1))];
  if (lengths.length > 1) {
    const detail = names.map((p) => `${p}: ${ports[p].length}`).join(', ');
    throw new NodeFailure(node.id, node.type, `inputs have unequal lengths (${detail})`);
  }
  const count = lengths[0] ?? 1;
  const perIteration = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const row: Record<string, Item> = {};
      for (const p of names) row[p] = ports[p].length === 1 ? ports[p][0] : ports[p][i];
      const broken = names.find((p) => row[p].status === 'failed');
      let items: Item[];
      if (broken === undefined) {
        items = await body(i, row);
      } else {
        const index = ports[broken].length === 1 ? 0 : i;
        const reason = row[broken].error?.message ?? 'unknown error';
        items = [failed({ message: `input '${broken}' item ${index} from node '${sources[broken]}' failed: ${reason}`, type: 'upstream_failed' })];
      }
      hooks.onIterationDone(node.id, i, items);
      return items;
    }),
  );
  return perIteration.flat();
}
