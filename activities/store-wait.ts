/**
 * D35: a big node's block waits out a store outage (FerretDB or MongoDB restarting) instead of
 * failing. Its reads and writes of pages that meet an unreachable store are tried again with
 * backoff for up to STORE_WAIT_MS while the block keeps heartbeating (Temporal is up; only the
 * store is gone), and a cancel ends the wait. Failing the attempt instead burnt the node's
 * attempts within seconds (each a server-selection timeout) and failed a 20,000-row run over a
 * FerretDB restart of ~15 s. A store gone for longer still fails the attempt, as before.
 */
import { Context } from '@temporalio/activity';
import { MongoNetworkError, MongoServerSelectionError } from 'mongodb';

/** The longest a block waits for its store. */
export const STORE_WAIT_MS = 120_000;

/** The store could not be reached (nothing about the operation itself). */
export function isStoreUnreachable(err: unknown): boolean {
  return (
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNetworkError ||
    (err as { name?: unknown })?.name === 'MongoPoolClearedError'
  );
}

/** Runs `op`, again after 0.5 s, 1 s, 2 s … (at most 5 s apart) while the store is unreachable; `beat` heartbeats meanwhile. */
export async function waitingForStore<T>(op: () => Promise<T>, beat: () => void): Promise<T> {
  const deadline = Date.now() + STORE_WAIT_MS;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5_000)) {
    try {
      return await op();
    } catch (err) {
      if (!isStoreUnreachable(err) || Date.now() + delay > deadline) throw err;
      beat();
      await Context.current().sleep(delay); // rejects when the activity is cancelled
    }
  }
}
