/**
 * The service's Prometheus metrics, on prom-client's default registry: the API serves them at
 * /metrics, and a worker in its own process serves its share on WORKER_METRICS_PORT. When API
 * and worker share a process (`npm start`), one scrape sees both.
 */
import { Counter, Gauge, Histogram, collectDefaultMetrics, register } from 'prom-client';

let defaultsCollected = false;

/** Starts collecting process metrics (CPU, memory, event loop lag) once per process. */
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ prefix: 'wrs_' });
}

export const runsStarted = new Counter({
  name: 'wrs_runs_started_total',
  help: 'Runs started, by mode.',
  labelNames: ['mode'] as const,
});
export const runsEnded = new Counter({
  name: 'wrs_runs_ended_total',
  help: 'Runs ended, by final status.',
  labelNames: ['status'] as const,
});
/** D36: one series per account, as the usage counters below. */
export const accountRunsEnded = new Counter({
  name: 'wrs_account_runs_ended_total',
  help: 'Ended runs, by account and final status: the run failure alert leaves out the account with the most failures.',
  labelNames: ['account', 'status'] as const,
});
export const startDuration = new Histogram({
  name: 'wrs_start_duration_seconds',
  help: 'Time to accept a start request (validation, record, Temporal start); not of a Prefer: wait start, whose start includes its first workflow task.',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
});
export const activeStreams = new Gauge({
  name: 'wrs_active_streams',
  help: 'Open SSE streams of this API process.',
});
export const queryDuration = new Histogram({
  name: 'wrs_temporal_query_duration_seconds',
  help: 'Latency of run snapshot queries, by outcome (ok; no_news when Temporal had nothing to say; unavailable when it did not answer).',
  labelNames: ['outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 3],
});
export const nodeAttempts = new Counter({
  name: 'wrs_node_attempts_total',
  help: "Attempts of nodes' work, by node type: a small run's chunk of rows (an activity attempt), a big run's row (a call in its block, D35); other activities' attempts (a block's own, a webhook delivery's, a file input's fetch) by their activity's name.",
  labelNames: ['type'] as const,
});
export const nodeRetries = new Counter({
  name: 'wrs_node_retries_total',
  help: "Attempts of nodes' work that were retries, by node type (a chunk's activity retry, a big run's row called again in its block); other activities' retries by their activity's name.",
  labelNames: ['type'] as const,
});

export const runDuration = new Histogram({
  name: 'wrs_run_duration_seconds',
  help: "Duration of ended runs from their record's creation to their end, by final status.",
  labelNames: ['status'] as const,
  buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
});

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The creation time (ms) in a D5 id `<prefix>_<ULID>`: the ULID's first 10 characters. */
function idTimeMs(id: string): number | undefined {
  const ulid = id.slice(id.indexOf('_') + 1);
  let ms = 0;
  for (const ch of ulid.slice(0, 10)) {
    const digit = CROCKFORD.indexOf(ch);
    if (digit < 0) return undefined;
    ms = ms * 32 + digit;
  }
  return ms;
}

/**
 * Counts a run's end by status, in all and for its account, and observes its duration, from its
 * id's creation time to its end.
 */
export function observeRunEnd(
  runId: string,
  account: string,
  status: string,
  endedAtMs: number,
): void {
  runsEnded.inc({ status });
  accountRunsEnded.inc({ account, status });
  const startedMs = idTimeMs(runId);
  if (startedMs !== undefined && endedAtMs >= startedMs)
    runDuration.observe({ status }, (endedAtMs - startedMs) / 1000);
}

// --- D36: what runs used, per account, counted once per run when its end is recorded (the
// finalize that wrote the record), from the run's own usage: the same numbers its `usage` shows.
export const accountProviderCalls = new Counter({
  name: 'wrs_account_provider_calls_total',
  help: 'Provider calls of ended runs, by account.',
  labelNames: ['account'] as const,
});
export const accountTokens = new Counter({
  name: 'wrs_account_tokens_total',
  help: 'Tokens of ended runs as the providers reported them, by account and direction (input, output).',
  labelNames: ['account', 'direction'] as const,
});
export const accountCost = new Counter({
  name: 'wrs_account_cost_usd_total',
  help: 'USD billed for ended runs (their total_cost, start fees included), by account.',
  labelNames: ['account'] as const,
});

/** Counts an ended run's usage and bill for its account (D36). */
export function observeRunUsage(
  account: string,
  usage: { provider_calls: number; input_tokens: number; output_tokens: number } | undefined,
  billedUsd: number,
): void {
  if (usage) {
    accountProviderCalls.inc({ account }, usage.provider_calls);
    accountTokens.inc({ account, direction: 'input' }, usage.input_tokens);
    accountTokens.inc({ account, direction: 'output' }, usage.output_tokens);
  }
  accountCost.inc({ account }, billedUsd);
}

// --- The API's HTTP requests (api/middleware/http-metrics.ts). `route` is the matched route's
// template (/api/v1/runs/:id), never the raw path, so the series stay bounded; `unmatched` otherwise.
export const httpRequests = new Counter({
  name: 'wrs_http_requests_total',
  help: 'HTTP requests answered by the API, by method, route template and status code.',
  labelNames: ['method', 'route', 'code'] as const,
});
export const httpRequestDuration = new Histogram({
  name: 'wrs_http_request_duration_seconds',
  help: "Time from a request's arrival to its response head (a stream: to its SSE head), by method, route template and status class.",
  labelNames: ['method', 'route', 'status_class'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

// --- Model providers (activities/provider-http.ts): every HTTP call to a configured provider.
export const providerRequests = new Counter({
  name: 'wrs_provider_requests_total',
  help: "HTTP calls to model providers, by configured provider name and outcome (ok: 2xx; rejected: a 4xx other than 401, 403, 408 and 429, the provider refusing the request it was sent, such as a tenant's prompt; http_error: another status; network_error: no answer; cancelled).",
  labelNames: ['provider', 'outcome'] as const,
});
export const providerRequestDuration = new Histogram({
  name: 'wrs_provider_request_duration_seconds',
  help: 'Duration of HTTP calls to model providers (until the whole answer is read), by configured provider name.',
  labelNames: ['provider'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
});

/** What a provider's answer says of the provider (the `outcome` of wrs_provider_requests_total). */
export type ProviderOutcome = 'ok' | 'rejected' | 'http_error';

/**
 * The outcome of an answer of HTTP `status`. A 4xx refuses the request it was sent (a tenant's
 * prompt, a model it named), no failure of the provider, except the provider refusing our key
 * (401, 403: the operator's to mend) and its throttling (408, 429).
 */
export function providerOutcome(status: number): ProviderOutcome {
  if (status >= 200 && status < 300) return 'ok';
  const ours = status === 401 || status === 403 || status === 408 || status === 429;
  return status >= 400 && status < 500 && !ours ? 'rejected' : 'http_error';
}

/** Times one provider call; `outcome` names how it ended. */
export async function observeProviderCall<T>(
  provider: string,
  call: () => Promise<T>,
  outcome: (result: T) => ProviderOutcome,
  failed: () => 'network_error' | 'cancelled',
): Promise<T> {
  const stop = providerRequestDuration.startTimer({ provider });
  try {
    const result = await call();
    providerRequests.inc({ provider, outcome: outcome(result) });
    return result;
  } catch (err) {
    providerRequests.inc({ provider, outcome: failed() });
    throw err;
  } finally {
    stop();
  }
}

// --- Server-side state, refreshed by the API on every scrape of its /metrics (api/routes/metrics.ts):
// it stays right when no worker polls, which the SDK's schedule-to-start latency cannot.
export const taskQueueBacklog = new Gauge({
  name: 'wrs_task_queue_backlog',
  help: 'Tasks waiting on the Temporal server (approximate backlog count of DescribeTaskQueue) in the run task queue, by task type, and in its block queue (D35) and webhook queue (D20).',
  labelNames: ['task_queue', 'task_type'] as const,
});
export const taskQueueBacklogAge = new Gauge({
  name: 'wrs_task_queue_backlog_age_seconds',
  help: 'Age of the oldest task waiting on the Temporal server in the run task queue, by task type, and in its block queue (D35) and webhook queue (D20).',
  labelNames: ['task_queue', 'task_type'] as const,
});
export const runsOpenPastTimeout = new Gauge({
  name: 'wrs_runs_open_past_timeout',
  help: 'Run workflows still open in Temporal longer than RUN_TIMEOUT_MS plus 10 minutes (a run should have ended by its own timeout).',
});
export const dependencyUp = new Gauge({
  name: 'wrs_dependency_up',
  help: 'Whether this API process reaches a dependency (1) or not (0): mongodb, temporal. Set on every scrape and readiness probe.',
  labelNames: ['dependency'] as const,
});

/** The exposition text and its content type, for a /metrics endpoint. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: register.contentType, body: await register.metrics() };
}
