/**
 * The answer to anything that starts a run (a start, D38's re-run): 202 with the run's id, its
 * event stream (`stream: true`), or (D28 `Prefer: wait`) its record once it ends within the wait.
 */
import type { Context } from 'koa';
import type { RunStreamDeps } from '../stream/run-streams';
import type { AsyncStartResponse } from '../contract/request-schemas';
import type { RunDoc } from '../../store/documents';
import { streamNewRun } from '../stream/run-streams';
import { awaitRunEnd, endWait, type AwaitRunEndDeps } from '../runs/await-run-end';
import { sendRun } from './run-body';
import type { EndWait } from '../temporal/run-gateway';
import type { KeyCap } from '../limits/key-cap';

/** What answering a start needs: the stream of a new run, or the wait for its end (D28). */
export type AnswerStartDeps = RunStreamDeps & AwaitRunEndDeps & { downloads: KeyCap };

/** D28: the seconds of `Prefer: wait=N` (at most 60; 0 without the preference). */
export function parsePreferWait(header: string): number {
  // Any number of digits: a wait longer than the most we hold is the most (as `wait=61` is).
  const match = /(?:^|[,;\s])wait\s*=\s*(\d+)\b/i.exec(header);
  return match ? Math.min(60, Number(match[1])) : 0;
}

/**
 * Starts the run with `start` and answers for it. Everything that can refuse the start happens
 * before a stream opens, so refusals are plain JSON errors; the key's stream cap comes first, so a
 * 429 `too_many_streams` starts and bills nothing.
 */
export async function answerStart(
  ctx: Context,
  deps: AnswerStartDeps,
  opts: {
    stream: boolean;
    start: (wait?: EndWait) => Promise<RunDoc>;
    /** Once a start that does not wait is made (a waited one's start includes the run's first workflow task). */
    onStarted?: () => void;
  },
): Promise<void> {
  const waitSeconds = parsePreferWait(ctx.get('prefer'));
  const release = opts.stream ? deps.streams.take(ctx.state.auth!.keyId) : undefined;
  // D28: the wait starts with the start, which carries it to the run's workflow.
  const wait = waitSeconds > 0 && !release ? endWait(deps, waitSeconds * 1000) : undefined;
  let run: RunDoc;
  try {
    run = await opts.start(wait);
  } catch (err) {
    release?.();
    throw err;
  }
  if (!wait) opts.onStarted?.();
  if (release) return streamNewRun(ctx, deps, run, release);
  // D28: hold the answer until the run ends or the wait is over; an ended run answers 200 with its record.
  const ended = wait ? await awaitRunEnd(deps, run, wait) : null;
  if (ended) {
    ctx.set('Preference-Applied', `wait=${waitSeconds}`);
    sendRun(ctx, ended, deps.downloads);
    return;
  }
  ctx.status = 202;
  ctx.body = {
    run_id: run._id,
    status: 'pending',
    published_workflow_id: run.published_workflow_id,
    published_workflow_version_id: run.published_workflow_version_id,
    created_at: run.created_at.toISOString(),
  } satisfies AsyncStartResponse;
}
