/**
 * D35: a big node's block waits out a store outage (FerretDB or MongoDB restarting) instead of
 * failing. Its reads and writes of pages that meet an unreachable store are tried again with
 * backoff for up to STORE_WAIT_MS while the block keeps heartbeating (Temporal is up; only the
 * store is gone), and a cancel ends the wait. Failing the attempt instead burnt the node's
 * attempts within seconds (each a server-selection timeout) and failed a 20,000-row run over a
 * FerretDB restart of ~15 s. A store gone for longer still fails the attempt, as before.
 */
import { Context } from '@temporalio/activity';
import { isStoreUnreachable } from '../store/db';
import { retrying } from '../lib/retrying';

/** The longest a block waits for its store. */
export const STORE_WAIT_MS = 120_000;

/** Runs `op`, again after 0.5 s, 1 s, 2 s … (at most 5 s apart) while the store is unreachable; `beat` heartbeats meanwhile. */
export function waitingForStore<T>(op: () => Promise<T>, beat: () => void): Promise<T> {
  return retrying(op, {
    forMs: STORE_WAIT_MS,
    retryable: isStoreUnreachable,
    firstPauseMs: 500,
    maxPauseMs: 5_000,
    pause: (ms) => {
      beat();
      return Context.current().sleep(ms); // rejects when the activity is cancelled
    },
  });
}
