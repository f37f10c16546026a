/**
 * One outcome per operation of an unordered bulk command (insertMany / bulkWrite with
 * `ordered: false`), for the group commit (store/group-commit.ts): the server tries every
 * operation and reports the failed ones by index, so each caller learns its own result.
 *
 * Only a report of per-operation errors is split up. Anything else the command throws (the
 * connection dropped, a write concern error: whether and how durably the writes happened is
 * unknown) fails every operation of the command, with that error.
 */
import type { Outcome } from './group-commit';

/** The failure of one operation of a bulk command; `code` is the server's (11000: duplicate key). */
export class OperationError extends Error {
  constructor(
    message: string,
    readonly code: number | undefined,
    readonly index: number,
  ) {
    super(message);
    this.name = 'OperationError';
  }
}

interface ReportedWriteError {
  index?: unknown;
  code?: unknown;
  errmsg?: unknown;
}

/** What the driver's MongoBulkWriteError carries that matters here. */
interface BulkFailure {
  writeErrors?: ReportedWriteError[] | ReportedWriteError;
  result?: { getWriteConcernError?: () => unknown };
}

/** Runs `send` (one unordered bulk command of `count` operations) and answers each operation's outcome. */
export async function bulkOutcomes(
  count: number,
  send: () => Promise<unknown>,
): Promise<Outcome<void>[]> {
  try {
    await send();
    return Array.from({ length: count }, () => ({ ok: true as const, value: undefined }));
  } catch (err) {
    return splitFailure(count, err);
  }
}

/** Each operation's outcome from the error of a bulk command; throws `err` when it is not a per-operation report. */
export function splitFailure(count: number, err: unknown): Outcome<void>[] {
  const failure = (typeof err === 'object' && err !== null ? err : {}) as BulkFailure;
  const reported = failure.writeErrors;
  const list = Array.isArray(reported) ? reported : reported ? [reported] : [];
  const indexed = list.filter(
    (e): e is ReportedWriteError & { index: number } =>
      Number.isInteger(e.index) && (e.index as number) >= 0 && (e.index as number) < count,
  );
  if (
    indexed.length === 0 ||
    indexed.length !== list.length ||
    failure.result?.getWriteConcernError?.()
  )
    throw err;
  const outcomes: Outcome<void>[] = Array.from({ length: count }, () => ({
    ok: true as const,
    value: undefined,
  }));
  for (const e of indexed) {
    const code = typeof e.code === 'number' ? e.code : undefined;
    const message = typeof e.errmsg === 'string' ? e.errmsg : 'write failed';
    outcomes[e.index] = { ok: false, error: new OperationError(message, code, e.index) };
  }
  return outcomes;
}
