/** The workflow of one run (workflow id = run id): executes the graph, answers the snapshot query, persists the end once. */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  condition,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Item } from '../domain/parts';
import { executeGraph, type IoNode } from './engine';
import { resolveFileInputs } from './file-inputs';
import { NodeFailure } from './errors';
import { Semaphore } from './semaphore';
import { RunState } from './run-state';
import { splitFinal } from './run-chunks';
import { failed } from './values';
import { awaitEndUpdate, snapshotQuery, type RunArgs, type RunStatus } from './definitions';
import { startWebhookDelivery } from './webhook-workflow';

/** Failure types an activity raises for a refusal that retrying cannot fix (docs/workflow-format.md "Providers"). */
export const NON_RETRYABLE_TYPES = ['ProviderRejected', 'InvalidNodeConfig'];

/** Runs one published workflow version to its end and returns the final status. */
export async function runWorkflow(args: RunArgs): Promise<{ status: RunStatus; total_cost: number }> {
  const state = new RunState(args, { now: () => Date.now(), random: Math.random });
  setHandler(snapshotQuery, (afterSequence) => state.snapshot(afterSequence ?? -1));
  setHandler(awaitEndUpdate, async () => {
    await condition(() => state.status !== 'running');
    return state.snapshot(Number.MAX_SAFE_INTEGER);
  });

  const { options } = args;
  const nodes = proxyActivities<Activities>({
    startToCloseTimeout: options.nodeAttemptTimeoutMs, // D10: one attempt of a node
    // Node activities heartbeat every second: a dead worker's attempt is retried after 10 s
    // instead of the whole attempt timeout, and a cancel (D8) reaches the call in flight,
    // which the run waits for so the provider really sees the request aborted.
    heartbeatTimeout: 10_000,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: options.retryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: Math.max(options.retryInitialMs, 30_000),
      maximumAttempts: options.nodeMaxAttempts,
      nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
    },
  });
  const persistence = proxyActivities<Activities>({
    // A handful of single-document writes: an attempt whose worker died is given up on (and retried elsewhere) after 10 s.
    startToCloseTimeout: 10_000,
    // The end of a run must reach MongoDB even if it is down for a while: retry without limit.
    retry: { initialInterval: 500, backoffCoefficient: 2, maximumInterval: 10_000 },
  });
  const slots = new Semaphore(options.concurrency);

  const callNode = (node: IoNode, iteration: number, ports: Record<string, Item>) => {
    const base = { runId: args.runId, accountId: args.accountId, iteration, ports };
    switch (node.type) {
      case 'llm':
        return nodes.llm({ ...base, node });
      case 'http_request':
        return nodes.httpRequest({ ...base, node });
      case 'image_generation':
        return nodes.imageGeneration({ ...base, node });
      case 'model':
        return nodes.model({ ...base, node });
    }
  };

  const runIoNode = (node: IoNode, iteration: number, ports: Record<string, Item>): Promise<Item[]> =>
    slots.with(async () => {
      try {
        const result = await callNode(node, iteration, ports);
        state.addCost(result.costUsd);
        return result.items;
      } catch (err) {
        const cause = err instanceof ActivityFailure ? err.cause : undefined;
        if (cause instanceof ApplicationFailure && cause.type === 'ProviderRejected') {
          const status = (cause.details?.[0] as { status?: number } | undefined)?.status;
          return [failed({ message: cause.message, type: 'provider_error', ...(status ? { code: status } : {}) })];
        }
        if (cause instanceof ApplicationFailure && cause.nonRetryable) throw new NodeFailure(node.id, node.type, cause.message);
        if (cause && !isCancellation(err)) {
          throw new NodeFailure(node.id, node.type, `gave up after ${options.nodeMaxAttempts} attempt(s): ${cause.message}`);
        }
        throw err;
      }
    });

  try {
    await CancellationScope.withTimeout(options.runTimeoutMs, async () =>
      // D19: file inputs become stored, signed parts first (workflows/file-inputs.ts).
      executeGraph(args.graph, await resolveFileInputs(args, (req) => slots.with(() => nodes.resolveFileInput(req)), options.nodeMaxAttempts), {
        runIoNode,
        onIterationStart: (nodeId, i) => state.iterationStarted(nodeId, i),
        onIterationDone: (nodeId, i, items) => state.iterationDone(nodeId, i, items),
      }),
    );
    state.finish('completed');
  } catch (err) {
    if (isCancellation(err)) {
      // The root scope is cancelled only by a cancel request; otherwise our own timeout fired (D10).
      if (CancellationScope.current().consideredCancelled) state.finish('cancelled');
      else state.finish('failed', 'run timed out');
    } else if (err instanceof NodeFailure) {
      state.finish('failed', err.message);
    } else {
      throw err; // a bug in workflow code: let Temporal retry the workflow task instead of failing the run
    }
  }

  const { final, chunks } = splitFinal(state.final());
  await CancellationScope.nonCancellable(async () => {
    // A large run's events and output go first, a few chunks at a time; the record that says how many comes last.
    for (let i = 0; i < chunks.length; i += 4) await Promise.all(chunks.slice(i, i + 4).map((chunk) => persistence.saveRunChunk(chunk)));
    await persistence.finalizeRun(final);
  });
  // D20: after the record is final (the webhook carries it); a child this run abandons, so the run ends now.
  const { webhook } = args;
  if (webhook) await CancellationScope.nonCancellable(() => startWebhookDelivery({ ...args, webhook }));
  return { status: state.status, total_cost: final.totalCost };
}
