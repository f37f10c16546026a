/** Reading a workflow's history from the load process: activity timings and why a workflow could not finish. */
import type { Client, WorkflowHandle } from '@temporalio/client';

type HistoryEvent = NonNullable<
  Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']
>[number];

/** temporal.api.enums.v1.WorkflowTaskFailedCause values we expect to meet (the proto package is not a direct dependency). */
const TASK_FAILED_CAUSES: Record<number, string> = {
  1: 'UNHANDLED_COMMAND',
  2: 'BAD_SCHEDULE_ACTIVITY_ATTRIBUTES',
  7: 'BAD_COMPLETE_WORKFLOW_EXECUTION_ATTRIBUTES',
  14: 'WORKFLOW_WORKER_UNHANDLED_FAILURE',
  24: 'NON_DETERMINISTIC_ERROR',
  27: 'PENDING_ACTIVITIES_LIMIT_EXCEEDED',
  36: 'GRPC_MESSAGE_TOO_LARGE',
  37: 'PAYLOADS_TOO_LARGE',
};

/** A history event's time in ms since the epoch (NaN when absent). */
export function ms(t: HistoryEvent['eventTime']): number {
  if (!t) return NaN;
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

/**
 * A workflow's history, 50 events a page: a 100,000-row run's whole history (its start argument
 * alone ~1.5 MB, its blocks' inputs more) is over the 4 MB one gRPC answer may hold.
 */
export async function fetchEvents(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId },
      maximumPageSize: 50,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    events.push(...((page.history?.events ?? []) as HistoryEvent[]));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return events;
}

/** Per activity: schedule → start (queueing in Temporal and the worker) and start → close (the call itself). */
export function activityTimings(events: HistoryEvent[]): {
  scheduleToStart: number[];
  startToClose: number[];
  workflowTasks: number;
} {
  const scheduled = new Map<string, number>();
  const started = new Map<string, number>();
  const scheduleToStart: number[] = [];
  const startToClose: number[] = [];
  let workflowTasks = 0;
  for (const e of events) {
    const id = String(e.eventId);
    if (e.activityTaskScheduledEventAttributes) {
      scheduled.set(id, ms(e.eventTime));
    } else if (e.activityTaskStartedEventAttributes) {
      const sid = String(e.activityTaskStartedEventAttributes.scheduledEventId);
      started.set(sid, ms(e.eventTime));
      const s = scheduled.get(sid);
      if (s !== undefined) scheduleToStart.push(ms(e.eventTime) - s);
    } else if (e.activityTaskCompletedEventAttributes) {
      const st = started.get(String(e.activityTaskCompletedEventAttributes.scheduledEventId));
      if (st !== undefined) startToClose.push(ms(e.eventTime) - st);
    } else if (e.workflowTaskCompletedEventAttributes) {
      workflowTasks++;
    }
  }
  return { scheduleToStart, startToClose, workflowTasks };
}

/** The failures recorded in a history (workflow task failures, termination, workflow failure), newest last, deduplicated. */
export function failuresIn(events: HistoryEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    let line: string | undefined;
    if (e.workflowTaskFailedEventAttributes) {
      const a = e.workflowTaskFailedEventAttributes;
      const cause = TASK_FAILED_CAUSES[a.cause ?? 0] ?? String(a.cause);
      line = `WorkflowTaskFailed cause=${cause}: ${a.failure?.message ?? ''}`;
    } else if (e.workflowExecutionTerminatedEventAttributes) {
      line = `WorkflowExecutionTerminated reason="${e.workflowExecutionTerminatedEventAttributes.reason ?? ''}" identity=${e.workflowExecutionTerminatedEventAttributes.identity ?? ''}`;
    } else if (e.workflowExecutionFailedEventAttributes) {
      line = `WorkflowExecutionFailed: ${e.workflowExecutionFailedEventAttributes.failure?.message ?? ''}`;
    } else if (e.activityTaskFailedEventAttributes) {
      line = `ActivityTaskFailed: ${e.activityTaskFailedEventAttributes.failure?.message ?? ''}`;
    }
    if (line && !out.includes(line)) out.push(line);
  }
  return out;
}

/**
 * When the run's state changed in the workflow: the completion time of the first workflow task
 * after the first activity of `activityType` completed (the task that appended the item's events).
 */
export function stateChangeAfterActivity(
  events: HistoryEvent[],
  activityType: string,
): number | undefined {
  const scheduledType = new Map<string, string>();
  let completedAt: number | undefined;
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes) {
      scheduledType.set(
        String(e.eventId),
        e.activityTaskScheduledEventAttributes.activityType?.name ?? '',
      );
    } else if (completedAt === undefined && e.activityTaskCompletedEventAttributes) {
      if (
        scheduledType.get(String(e.activityTaskCompletedEventAttributes.scheduledEventId)) ===
        activityType
      )
        completedAt = ms(e.eventTime);
    } else if (completedAt !== undefined && e.workflowTaskCompletedEventAttributes) {
      return ms(e.eventTime);
    }
  }
  return undefined;
}

/** When the workflow closed (its last event, if that closed it), or undefined while it is open. */
export function closedAt(events: HistoryEvent[]): number | undefined {
  const last = events.at(-1);
  if (
    !last ||
    !(
      last.workflowExecutionCompletedEventAttributes ||
      last.workflowExecutionFailedEventAttributes ||
      last.workflowExecutionTerminatedEventAttributes ||
      last.workflowExecutionCanceledEventAttributes ||
      last.workflowExecutionTimedOutEventAttributes
    )
  )
    return undefined;
  return ms(last.eventTime);
}

/** The spans in which a workflow task was scheduled or running (ms): Temporal holds a query that arrives in one until the task ends. */
export function workflowTaskSpans(events: HistoryEvent[]): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  let scheduled: number | undefined;
  for (const e of events) {
    if (e.workflowTaskScheduledEventAttributes) scheduled = ms(e.eventTime);
    else if (
      scheduled !== undefined &&
      (e.workflowTaskCompletedEventAttributes ||
        e.workflowTaskFailedEventAttributes ||
        e.workflowTaskTimedOutEventAttributes)
    ) {
      spans.push([scheduled, ms(e.eventTime)]);
      scheduled = undefined;
    }
  }
  return spans;
}

/**
 * Where a short run's time went, from its history (D36, bench P8): ms from the client's POST to
 * the workflow's start, waiting for and running workflow tasks, waiting for and running
 * activities, the close, and from the close to the client seeing `completed`.
 */
export function runBreakdown(
  events: HistoryEvent[],
  postMs: number,
  seenMs: number,
): Record<string, number> {
  const out: Record<string, number> = {
    toStarted: NaN,
    wftWait: 0,
    wftRun: 0,
    actWait: 0,
    actRun: 0,
    toClosed: NaN,
    closedToSeen: NaN,
  };
  const at = new Map<string, number>();
  for (const e of events) {
    const t = ms(e.eventTime);
    at.set(String(e.eventId), t);
    if (e.workflowExecutionStartedEventAttributes) out.toStarted = t - postMs;
    else if (e.workflowTaskStartedEventAttributes)
      out.wftWait +=
        t - (at.get(String(e.workflowTaskStartedEventAttributes.scheduledEventId)) ?? t);
    else if (e.workflowTaskCompletedEventAttributes)
      out.wftRun +=
        t - (at.get(String(e.workflowTaskCompletedEventAttributes.startedEventId)) ?? t);
    else if (e.activityTaskStartedEventAttributes)
      out.actWait +=
        t - (at.get(String(e.activityTaskStartedEventAttributes.scheduledEventId)) ?? t);
    else if (e.activityTaskCompletedEventAttributes)
      out.actRun +=
        t - (at.get(String(e.activityTaskCompletedEventAttributes.startedEventId)) ?? t);
    else if (e.workflowExecutionCompletedEventAttributes) {
      out.toClosed = t - postMs;
      out.closedToSeen = seenMs - t;
    }
  }
  return out;
}
