import type { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { NodeChunkRequest } from '../activities/types';
import { nodeAttempts, nodeRetries } from '../lib/metrics';

/**
 * Counts every activity attempt, and the retries among them, by type: a chunk of a node's rows
 * (runNodeChunk) counts under its node's type (`llm`, `http_request` ...), other activities under
 * their own name. A big run's block (runNodeBlock) too: each of its rows' calls is counted under
 * the node's type where it is made (activities/node-block.ts), so the block's attempt under that
 * type would count its rows a second time, and a retry of the block (a worker lost mid-block, its
 * heartbeat timed out) is no provider's failure (WrsNodeRetriesHigh reads the provider types only).
 */
export const countAttempts: ActivityInterceptorsFactory = (ctx: Context) => ({
  inbound: {
    execute: (input, next) => {
      const { activityType, attempt } = ctx.info;
      const chunk =
        activityType === 'runNodeChunk'
          ? (input.args[0] as Partial<NodeChunkRequest> | undefined)
          : undefined;
      const type = chunk?.node?.type ?? activityType;
      nodeAttempts.inc({ type });
      if (attempt > 1) nodeRetries.inc({ type });
      return next(input);
    },
  },
});
