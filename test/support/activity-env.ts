/**
 * Activities run alone, in Temporal's activity test environment against the real store: the
 * environment (failures the tests expect are not printed) and the request of a block of `llm`
 * rows (activities/node-block.ts) that several activity tests run.
 */
import type { Info } from '@temporalio/activity';
import { ActivityCancellationDetails } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { NodeBlockRequest } from '../../activities/types';

/**
 * Temporal's activity environment; the failures these tests expect are not printed. `info`: an
 * attempt after the first, as Temporal runs it (`attempt`, the `heartbeatDetails` the last one left).
 */
export function activityEnv(info?: Partial<Info>): MockActivityEnvironment {
  return new MockActivityEnvironment(info, { logger: new DefaultLogger('ERROR') });
}

/** Cancels the environment's activity as its worker's drain does (activities/shutdown.ts). */
export function drain(env: MockActivityEnvironment): void {
  env.cancel('WORKER_SHUTDOWN', new ActivityCancellationDetails({ workerShutdown: true }));
}

/** Block 0 of node `ask` (an `llm` of gpt-test, `{{row}}`) over rows `row 0` … `row <rows - 1>`. */
export function llmBlock(
  runId: string,
  { accountId, rows, concurrency }: { accountId: string; rows: number; concurrency: number },
): NodeBlockRequest {
  return {
    runId,
    accountId,
    node: {
      id: 'ask',
      type: 'llm',
      provider: 'openai',
      model: 'gpt-test',
      prompt: '{{row}}',
      output: 'text',
    },
    block: 0,
    first: 0,
    count: rows,
    ports: { row: { packed: Array.from({ length: rows }, (_, i) => `row ${i}`) } },
    sources: { row: 'split' },
    concurrency,
  };
}
