import type { Collections } from '../../store/db';
import { findRunLog } from '../../store/runs';
import type { RunGateway } from '../temporal/run-gateway';
import type { PollSource } from './run-poller';

/**
 * Pollers read the live workflow through the gateway and fall back to the stored record.
 * `onMissing`: a run Temporal has no workflow for (a start that died may be ended by it, and the
 * poller then finds its final record).
 */
export function createPollSource(
  gateway: RunGateway,
  collections: Pick<Collections, 'runs' | 'runChunks'>,
  onMissing: (runId: string) => Promise<void> = async () => undefined,
): PollSource {
  return {
    async snapshot(runId, afterSequence) {
      const { snapshot, unanswered, missing } = await gateway.probe(runId, afterSequence);
      if (missing) await onMissing(runId);
      // A run Temporal said nothing definite about (a query or describe that failed or timed out,
      // as while it restarts and its worker catches up) is not `pending`: a failed look, so a
      // stream waits instead of going back to the record's status.
      if (unanswered) throw new Error(`run ${runId} did not answer its query in time`);
      return snapshot;
    },
    async awaitEnd(runId, signal) {
      const ended = await gateway.awaitEnd(runId, signal);
      return typeof ended === 'string' ? null : ended;
    },
    stored: (runId) => findRunLog(collections, runId),
  };
}
