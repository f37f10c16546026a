import type { Collections } from '../../store/db';
import type { RunGateway } from '../run-gateway';
import type { PollSource } from './run-poller';

/** Pollers read the live workflow through the gateway and fall back to the stored record. */
export function createPollSource(gateway: RunGateway, collections: Pick<Collections, 'runs'>): PollSource {
  return {
    snapshot: (runId, afterSequence) => gateway.snapshot(runId, afterSequence),
    async stored(runId) {
      const doc = await collections.runs.findOne({ _id: runId }, { projection: { status: 1, events: 1, finalized: 1 } });
      return doc ? { status: doc.status, events: doc.finalized ? doc.events : null } : null;
    },
  };
}
