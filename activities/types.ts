import type { NodeOfType } from '../domain/graph';
import type { Item } from '../domain/parts';

/** One iteration of an I/O node, as the workflow hands it to an activity. */
export interface NodeRequest<T extends 'llm' | 'http_request' | 'image_generation' | 'model'> {
  runId: string;
  /** Owner of the files the node stores (D19); absent in requests of runs started before files existed. */
  accountId?: string;
  node: NodeOfType<T>;
  iteration: number;
  /** The item each input port receives in this iteration. */
  ports: Record<string, Item>;
}

/** What a node iteration produced and what it cost (D17). */
export interface NodeResult {
  items: Item[];
  costUsd: number;
}
