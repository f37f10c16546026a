/**
 * wrs_node_attempts_total and wrs_node_retries_total by type (worker/metrics-interceptor.ts): a small
 * run's chunk counts under its node's type, a big run's block under `runNodeBlock` (its rows' calls
 * are counted under the node's type in the block, so they are not counted twice), a tenant's own
 * endpoints (a webhook delivery, a file input's fetch) under their activity's name.
 */
import assert from 'node:assert/strict';
import type { Context } from '@temporalio/activity';
import type { ActivityExecuteInput } from '@temporalio/worker';
import { nodeAttempts, nodeRetries } from '../../lib/metrics';
import { countAttempts } from '../../worker/metrics-interceptor';

async function counts(): Promise<{
  attempts: Record<string, number>;
  retries: Record<string, number>;
}> {
  const byType = async (counter: typeof nodeAttempts) =>
    Object.fromEntries(
      (await counter.get()).values.map((v) => [String(v.labels.type), v.value] as const),
    );
  return { attempts: await byType(nodeAttempts), retries: await byType(nodeRetries) };
}

/** Runs one attempt of `activityType` through the interceptor. */
async function attempt(activityType: string, attemptNumber: number, arg?: unknown): Promise<void> {
  const ctx = { info: { activityType, attempt: attemptNumber } } as unknown as Context;
  const execute = countAttempts(ctx).inbound?.execute;
  assert.ok(execute);
  const input = { args: arg === undefined ? [] : [arg], headers: {} } as ActivityExecuteInput;
  await execute(input, async () => undefined);
}

describe('worker metrics: node attempts and retries by type', () => {
  beforeEach(() => {
    nodeAttempts.reset();
    nodeRetries.reset();
  });

  it("counts a chunk under its node's type, a block under its activity's name, the tenant's endpoints under theirs", async () => {
    await attempt('runNodeChunk', 1, { node: { type: 'llm' } });
    await attempt('runNodeChunk', 2, { node: { type: 'llm' } });
    await attempt('runNodeBlock', 1, { node: { type: 'llm' } });
    await attempt('runNodeBlock', 2, { node: { type: 'http_request' } });
    await attempt('deliverWebhook', 3);
    await attempt('resolveFileInput', 2);
    assert.deepEqual(await counts(), {
      attempts: { llm: 2, runNodeBlock: 2, deliverWebhook: 1, resolveFileInput: 1 },
      retries: { llm: 1, runNodeBlock: 1, deliverWebhook: 1, resolveFileInput: 1 },
    });
  });
});
