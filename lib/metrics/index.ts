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
export const startDuration = new Histogram({
  name: 'wrs_start_duration_seconds',
  help: 'Time to accept a start request (validation, record, Temporal start).',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
});
export const activeStreams = new Gauge({ name: 'wrs_active_streams', help: 'Open SSE streams.' });
export const queryDuration = new Histogram({
  name: 'wrs_temporal_query_duration_seconds',
  help: 'Latency of run snapshot queries, by outcome (ok; no_news when Temporal had nothing to say; unavailable when it did not answer).',
  labelNames: ['outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 3],
});
export const nodeAttempts = new Counter({
  name: 'wrs_node_attempts_total',
  help: 'Node activity attempts, by node type.',
  labelNames: ['type'] as const,
});
export const nodeRetries = new Counter({
  name: 'wrs_node_retries_total',
  help: 'Node activity attempts that were retries, by node type.',
  labelNames: ['type'] as const,
});

/** The exposition text and its content type, for a /metrics endpoint. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: register.contentType, body: await register.metrics() };
}
