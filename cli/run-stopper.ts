/**
 * D39: what the CLI needs of Temporal to delete a run that is still live: stop its workflows
 * before its data goes (a workflow left running after its key is destroyed could never decode
 * another task). Cancel first, so the run's own end books what it cost; terminate what has not
 * stopped in time (such a run is not billed: settling needs the API's replay); end its webhook
 * child; ask Temporal to delete the closed executions (tidiness, the destroyed key is what counts).
 * No payload is read or written here, so no codec is needed.
 */
import { Connection } from '@temporalio/client';
import type { Config } from '../config';
import { connectFirst } from '../config/temporal-connection';
import { webhookWorkflowId } from '../workflows/definitions';

export interface RunStopper {
  /** Stops the run's workflows; resolves once they are closed (or were never there). */
  stop(runId: string): Promise<void>;
  close(): Promise<void>;
}

/** How long a cancelled run gets to end by itself before it is terminated. */
const CANCEL_WAIT_MS = 15_000;
/** temporal.api.enums.v1.WorkflowExecutionStatus RUNNING. */
const RUNNING = 1;

/** A RunStopper on its own connection to the configured Temporal. */
export async function temporalRunStopper(temporal: Config['temporal']): Promise<RunStopper> {
  const connection = await connectFirst(temporal, (options) => Connection.connect(options));
  return runStopper(connection, temporal.namespace);
}

/** A RunStopper on an open connection (not closed by it). */
export function runStopper(
  connection: Connection,
  namespace: string,
): RunStopper & { connection: Connection } {
  const service = connection.workflowService;
  const running = async (workflowId: string) => {
    try {
      const d = await service.describeWorkflowExecution({ namespace, execution: { workflowId } });
      return d.workflowExecutionInfo?.status === RUNNING;
    } catch {
      return false; // unknown (never started, or forgotten): nothing to stop
    }
  };
  const ignore = () => undefined;
  return {
    connection,
    async stop(runId) {
      const webhook = webhookWorkflowId(runId);
      if (await running(runId)) {
        await service
          .requestCancelWorkflowExecution({
            namespace,
            workflowExecution: { workflowId: runId },
            reason: 'run deleted (D39)',
          })
          .catch(ignore);
        const deadline = Date.now() + CANCEL_WAIT_MS;
        while ((await running(runId)) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 250));
        if (await running(runId))
          await service
            .terminateWorkflowExecution({
              namespace,
              workflowExecution: { workflowId: runId },
              reason: 'run deleted (D39): it did not stop when cancelled',
            })
            .catch(ignore);
      }
      if (await running(webhook))
        await service
          .terminateWorkflowExecution({
            namespace,
            workflowExecution: { workflowId: webhook },
            reason: 'run deleted (D39)',
          })
          .catch(ignore);
      for (const workflowId of [runId, webhook])
        await service
          .deleteWorkflowExecution({ namespace, workflowExecution: { workflowId } })
          .catch(ignore);
    },
    close: () => connection.close(),
  };
}
