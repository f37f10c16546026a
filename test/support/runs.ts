/** Starting runs and running them to the end through the API: the steps most run tests begin with. */
import assert from 'node:assert/strict';
import { isId } from '../../domain/ids';
import type { Collections } from '../../store/db';
import type { LedgerDoc, StoredRunDoc } from '../../store/documents';
import { deriveId } from '../../store/ids';
import { findRunLog } from '../../store/runs';
import type { RunEvent } from '../../domain/run';
import { publish, waitForRun } from './fixtures';
import { call, waitFor } from './http';

/** Starts a run of `workflowId` (slug or id), asserts the 202 and a run id, and returns the id. */
export async function startRun(
  url: string,
  key: string,
  workflowId: string,
  inputs: Record<string, unknown> = {},
  opts: { headers?: Record<string, string>; body?: Record<string, unknown> } = {},
): Promise<string> {
  const res = await call(url, 'POST', '/api/v1/responses', {
    key,
    headers: opts.headers,
    body: { workflowId, inputs, ...opts.body },
  });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.ok(isId('run', res.body.run_id), res.body.run_id);
  return res.body.run_id;
}

/** Publishes `doc`, runs it with `inputs` and returns the final run record (a minute allows for media and provider polls). */
export async function runToEnd(
  url: string,
  key: string,
  doc: { slug: string },
  inputs: Record<string, unknown> = {},
  timeoutMs = 60_000,
): Promise<any> {
  await publish(url, key, doc);
  return waitForRun(url, key, await startRun(url, key, doc.slug, inputs), timeoutMs);
}

/**
 * A run's record once its end is written. A read may answer a run's end from its workflow's query
 * a moment before the finalize activity writes the record and books the debit (D17).
 */
export function finalizedRecord(c: Collections, runId: string): Promise<StoredRunDoc> {
  return waitFor(
    async () => {
      const doc = await c.runs.findOne({ _id: runId });
      return doc?.finalized ? doc : undefined;
    },
    { what: `the final record of ${runId}` },
  );
}

/** A run's whole stored event log (store/runs.ts findRunLog) once its end is written, made whole. */
export async function storedLog(c: Collections, runId: string): Promise<RunEvent[]> {
  await finalizedRecord(c, runId);
  return (await findRunLog(c, runId))!.log!.toArray();
}

/** A run's one debit (D17) once its end has booked it (see finalizedRecord). */
export function bookedDebit(c: Collections, runId: string): Promise<LedgerDoc> {
  return waitFor(
    async () => (await c.ledger.findOne({ _id: deriveId('led', runId) })) ?? undefined,
    {
      what: `the debit of ${runId}`,
    },
  );
}
