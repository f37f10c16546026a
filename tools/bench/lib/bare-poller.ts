/**
 * P3's baseline: the stream's poll without the service. The load process queries a run's
 * workflow itself, once a second from a random phase, with the API's own query (the snapshot
 * after the last sequence it has, refused once the workflow has closed, when the run's record is
 * read instead). What separates its lag from a client's is the API, SSE and the HTTP hop; what
 * both share is Temporal's and the worker's time to answer a query on this machine.
 */
import { Client, QueryRejectedError } from '@temporalio/client';
import type { Collections } from '../../../store/db';
import { findRunRecord } from '../../../store/runs';
import { snapshotQuery } from '../../../workflows/definitions';
import type { RunEvent } from '../../../domain/run';
import { sleep } from './stats';

/** One query: when it began and how long it took (ms, epoch). */
export interface TimedQuery {
  at: number;
  ms: number;
}

export interface BarePoll {
  runId: string;
  /** When the poll first held the event it waits for (epoch ms); undefined if it never did. */
  seenAt?: number;
  /** Whether it was seen in the run's record (the workflow had closed) rather than a query answer. */
  fromRecord: boolean;
  queries: TimedQuery[];
}

/**
 * Polls each run until its `eventType` event is seen (or `deadline`), the way one API poller
 * does. Resolves with every run's poll once all have ended.
 */
export async function barePoll(opts: {
  temporal: Client;
  collections: Pick<Collections, 'runs' | 'runChunks'>;
  runIds: string[];
  pollMs: number;
  eventType: RunEvent['type'];
  deadline: number;
}): Promise<BarePoll[]> {
  // The API's query options: a closed workflow is refused, not replayed.
  const client = new Client({
    connection: opts.temporal.connection,
    namespace: opts.temporal.options.namespace,
    dataConverter: opts.temporal.options.dataConverter,
    workflow: { queryRejectCondition: 'NOT_OPEN' },
  });
  const pollOne = async (runId: string): Promise<BarePoll> => {
    const poll: BarePoll = { runId, fromRecord: false, queries: [] };
    const handle = client.workflow.getHandle(runId);
    let after = -1;
    let next = Date.now() + Math.random() * opts.pollMs;
    while (Date.now() < opts.deadline) {
      await sleep(Math.max(0, next - Date.now()));
      const at = Date.now();
      next = at + opts.pollMs;
      let events: RunEvent[] = [];
      let fromRecord = false;
      try {
        const snapshot = await handle.query(snapshotQuery, after);
        events = snapshot.events;
      } catch (err) {
        if (!(err instanceof QueryRejectedError)) throw err;
        const record = await findRunRecord(opts.collections, runId);
        events = (record?.finalized ? record.events : null) ?? [];
        fromRecord = true;
      }
      poll.queries.push({ at, ms: Date.now() - at });
      if (events.some((event) => event.type === opts.eventType)) {
        poll.seenAt = Date.now();
        poll.fromRecord = fromRecord;
        return poll;
      }
      after = events.at(-1)?.sequence_number ?? after;
    }
    return poll;
  };
  return Promise.all(opts.runIds.map(pollOne));
}
