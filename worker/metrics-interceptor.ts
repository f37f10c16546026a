import type { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { nodeAttempts, nodeRetries } from '../metrics';

/** Counts every activity attempt, and the retries among them, by activity type (the node type). */
export const countAttempts: ActivityInterceptorsFactory = (ctx: Context) => ({
  inbound: {
    execute: (input, next) => {
      const { activityType, attempt } = ctx.info;
      nodeAttempts.inc({ type: activityType });
      if (attempt > 1) nodeRetries.inc({ type: activityType });
      return next(input);
    },
  },
});
