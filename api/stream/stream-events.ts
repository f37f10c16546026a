/**
 * Every stream event the API itself makes (spec "Events"): the data objects of the SSE frames that
 * do not come from a run's workflow. A run's log (items, the end) is the workflow's
 * (workflows/run-state.ts); `response.created` and `response.failed` are built by the model's one
 * builder each (domain/run.ts), because the workflow writes the same events into its log and the
 * bytes must not differ. The framing of any of these is sse.ts's.
 */
import type { RunDoc } from '../../store/documents';
import {
  createdEvent,
  failedEvent,
  type ResumedEvent,
  type RunEvent,
  type RunStatus,
} from '../../domain/run';

/** `response.created` of a run the API has recorded but no worker has run yet (the workflow's log entry 0, the same bytes). */
export function createdEventOf(
  run: Pick<RunDoc, '_id' | 'created_at' | 'published_workflow_id'>,
): RunEvent {
  return createdEvent({
    runId: run._id,
    createdAtMs: run.created_at.getTime(),
    publishedWorkflowId: run.published_workflow_id,
  });
}

/** The first event of a reattached stream: the client's cursor, and where the run stands now. */
export function resumedEvent(runId: string, cursor: number, status: RunStatus): ResumedEvent {
  return {
    type: 'response.resumed',
    sequence_number: cursor,
    response: { id: runId, run_id: runId, status },
  };
}

/** D31: the terminal event the API writes for a run whose workflow closed without finalizing (runs/settle-run.ts). */
export function settledFailureEvent(sequenceNumber: number, message: string): RunEvent {
  return failedEvent(sequenceNumber, message);
}

/**
 * The data of a stream's `error` event (the error envelope's shape): not part of the run's log,
 * so it has no sequence number.
 */
export interface StreamErrorEvent {
  type: 'error';
  error: { message: string; type: string; code: string };
}

/** D6: the stream's API key was revoked; the stream ends without `[DONE]` (a reconnect is refused). */
export function keyRevokedEvent(): StreamErrorEvent {
  return {
    type: 'error',
    error: {
      message: 'The API key of this stream has been revoked.',
      type: 'authentication_error',
      code: 'key_revoked',
    },
  };
}

/** D39: the run was deleted while streamed; the stream ends without `[DONE]` (a reconnect is 404). */
export function runDeletedEvent(runId: string): StreamErrorEvent {
  return {
    type: 'error',
    error: {
      message: `Run \`${runId}\` was deleted.`,
      type: 'not_found_error',
      code: 'not_found',
    },
  };
}
