/** GET /api/v1/runs/{runId} (the run record, safe to poll), GET /api/v1/runs/{runId}/stream (reattach), DELETE /api/v1/runs/{runId} (D39). */
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { GuardDeps } from '../deps';
import type { KeyCap } from '../limits/key-cap';
import { authenticate } from '../middleware/authenticate';
import { rateLimit } from '../middleware/rate-limit';
import { cancelRun } from '../runs/cancel-run';
import { deleteRun, type DeleteRunDeps } from '../runs/delete-run';
import { listRuns, type ListRunsDeps } from '../runs/list-runs';
import {
  ListRunsQuerySchema,
  OutputItemsQuerySchema,
  ReadRunQuerySchema,
  ResultsFileQuerySchema,
  parseRequest,
  StreamQuerySchema,
} from '../contract/request-schemas';
import {
  listOutputItems,
  outputItemLines,
  type OutputItemsDeps,
  type ResultsFormat,
} from '../runs/output-items';
import { loadRunHead, readRunAnswer, type ReadRunDeps } from '../runs/read-run';
import { sendRun } from './run-body';
import { streamExistingRun, type RunStreamDeps } from '../stream/run-streams';

/** What the runs routes use: their guards, and the run use cases they call. */
export type RunsRouteDeps = GuardDeps &
  ReadRunDeps &
  ListRunsDeps &
  OutputItemsDeps &
  DeleteRunDeps &
  RunStreamDeps & { downloads: KeyCap };

/** Routes of the runs resource. */
export function runsRoutes(deps: RunsRouteDeps): Router {
  const router = new Router();
  router.get('/api/v1/runs', authenticate(deps), rateLimit(deps, 'requests'), async (ctx) => {
    ctx.body = await listRuns(
      deps,
      ctx.state.auth!.accountId,
      parseRequest(ListRunsQuerySchema, ctx.query, 'query'),
    );
  });
  router.get(
    '/api/v1/runs/:runId',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      const query = parseRequest(ReadRunQuerySchema, ctx.query, 'query');
      const { body } = await readRunAnswer(deps, ctx.state.auth!.accountId, ctx.params.runId, {
        output: query.include_output,
      });
      sendRun(ctx, body, deps.downloads);
    },
  );
  router.get(
    '/api/v1/runs/:runId/outputs/:key',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      // D35: the results file when asked for by Accept, else a page of items.
      const format = resultsFormat(ctx);
      if (format) return sendResultsFile(ctx, deps, format);
      const query = parseRequest(OutputItemsQuerySchema, ctx.query, 'query');
      ctx.body = await listOutputItems(
        deps,
        ctx.state.auth!.accountId,
        ctx.params.runId,
        ctx.params.key,
        query,
      );
    },
  );
  router.post(
    '/api/v1/runs/:runId/cancel',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      const run = await cancelRun(deps, ctx.state.auth!.accountId, ctx.params.runId);
      ctx.status = 202; // D8: accepted; the run record shows `cancelled` once the run has stopped
      sendRun(ctx, run, deps.downloads);
    },
  );
  router.delete(
    '/api/v1/runs/:runId',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      // D39: 200 `{id, object: "run", deleted: true}`; a live run is cancelled first.
      ctx.body = await deleteRun(deps, ctx.state.auth!.accountId, ctx.params.runId);
    },
  );
  router.get(
    '/api/v1/runs/:runId/stream',
    authenticate(deps),
    rateLimit(deps, 'requests'),
    async (ctx) => {
      // The cursor streamExistingRun uses is checked there; this refuses a malformed query cursor even when the header wins.
      parseRequest(StreamQuerySchema, ctx.query, 'query');
      // Ownership is checked before any byte of the stream: another account's run is a JSON 404.
      const run = await loadRunHead(deps.collections, ctx.state.auth!.accountId, ctx.params.runId);
      await streamExistingRun(ctx, deps, run);
    },
  );
  return router;
}

/** D35: the results file, every item of the output as JSON Lines or CSV. */
async function sendResultsFile(
  ctx: Context,
  deps: RunsRouteDeps,
  format: ResultsFormat,
): Promise<void> {
  // A `limit` or `starting_after` would be a page's: refused rather than ignored for the whole file.
  parseRequest(ResultsFileQuerySchema, ctx.query, 'query');
  // A download holds one of its key's slots until its answer ends, however it ends (download-cap.ts).
  ctx.res.once('close', deps.downloads.take(ctx.state.auth!.keyId));
  const { runId, key } = ctx.params;
  const lines = await outputItemLines(deps, ctx.state.auth!.accountId, runId, key, format);
  // A download names itself (koa sets a type from the name's extension: ours is set after).
  ctx.attachment(`${runId}-${key.slice(0, 64)}.${format === 'csv' ? 'csv' : 'jsonl'}`);
  ctx.type = RESULTS_TYPES[format];
  ctx.body = Readable.from(lines, { objectMode: false });
}

/** The media types of the results file (D35), by format. */
const RESULTS_TYPES: Record<ResultsFormat, string> = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv; charset=utf-8',
};

/**
 * The results file's format the request's `Accept` prefers (its q-values weighed), or undefined:
 * a page of items as JSON, also when `Accept` is absent, any type, or types we do not serve.
 */
function resultsFormat(ctx: Context): ResultsFormat | undefined {
  ctx.vary('Accept'); // the answer's format follows it: no cache may give one caller's to another
  const best = ctx.accepts('application/json', ...ACCEPTED);
  return best === ACCEPTED[0] ? 'ndjson' : best === ACCEPTED[1] ? 'csv' : undefined;
}

/** What Accept may name for the results file: with `charset=utf-8` (ours) or without any parameter. */
const ACCEPTED = ['application/x-ndjson; charset=utf-8', 'text/csv; charset=utf-8'] as const;
