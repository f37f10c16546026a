/**
 * File, image and video inputs (D19) are resolved before the graph runs: each becomes the part
 * the run works with (a `file_...` id gets a signed link, a URL is fetched and stored by the
 * worker through the SSRF guard). An input that cannot be resolved fails the run, naming the
 * input, before any node (and any provider bill) runs: every result would depend on it.
 */
import { ActivityFailure, ApplicationFailure, isCancellation } from '@temporalio/workflow';
import type { FileInputRequest } from '../activities/file-input';
import type { Part } from '../domain/parts';
import { normalizeLabel } from '../domain/labels';
import type { RunArgs } from './definitions';
import { NodeFailure } from './errors';

const FILE_TYPES = new Set(['image', 'video', 'file']);

/** Returns the run's inputs with every file-typed value replaced by its resolved part. */
export async function resolveFileInputs(
  args: Pick<RunArgs, 'runId' | 'accountId' | 'graph' | 'inputs'>,
  resolve: (req: FileInputRequest, nodeId: string) => Promise<Part>,
  maxAttempts: number,
): Promise<Record<string, unknown>> {
  const inputs = { ...args.inputs };
  await Promise.all(
    args.graph.nodes.map(async (node) => {
      if (node.type !== 'user_input' || !FILE_TYPES.has(node.input_type)) return;
      const key = normalizeLabel(node.label);
      const value = inputs[key];
      if (typeof value !== 'string') return;
      try {
        inputs[key] = await resolve(
          {
            runId: args.runId,
            accountId: args.accountId,
            key,
            inputType: node.input_type as FileInputRequest['inputType'],
            value,
          },
          node.id,
        );
      } catch (err) {
        if (isCancellation(err)) throw err;
        const cause = err instanceof ActivityFailure ? err.cause : undefined;
        if (cause instanceof ApplicationFailure && cause.nonRetryable)
          throw new NodeFailure(node.id, node.type, cause.message);
        if (cause)
          throw new NodeFailure(
            node.id,
            node.type,
            `gave up after ${maxAttempts} attempt(s): ${cause.message}`,
          );
        throw err;
      }
    }),
  );
  return inputs;
}
