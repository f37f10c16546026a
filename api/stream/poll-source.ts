import type { Collections } from '../../store/db';
import { findRunRecord } from '../../store/runs';
import type { RunGateway } from '../temporal/run-gateway';
import type { PollSource } from './run-poller';

/** Pollers read the live workflow through the gateway and fall back to the stored record. */
export function createPollSource(
  gateway: RunGateway,
  collections: Pick<Collections, 'runs' | 'runChunks'>,
): PollSource {
  return {
    snapshot: (runId, afterSequence) => gateway.snapshot(runId, afterSequence),
    async stored(runId) {
      const doc = await findRunRecord(collections, runId);
      return doc ? { status: doc.status, events: doc.finalized ? doc.events : null } : null;
    },
  };
}
