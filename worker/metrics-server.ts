/**
 * The worker process's HTTP side port (WORKER_METRICS_PORT): GET /metrics (node attempts, retries,
 * runs ended, process metrics), and the orchestrator's probes. /healthz is the liveness probe: it
 * is answered from the event loop, so a blocked loop makes the probe time out, and it answers 503
 * when the loop was recently blocked for longer than `maxLagMs` (a loop that is free only now and
 * then still gets restarted). /readyz is the readiness probe: 200 only while the Temporal worker
 * is running (polling its task queue).
 */
import http from 'node:http';
import { collectProcessMetrics, metricsText } from '../lib/metrics';
import { watchEventLoopLag } from './metrics-loop-lag';

export interface WorkerProbeOptions {
  /** Whether the worker is polling (the SDK worker's state is RUNNING); absent: always ready. */
  ready?: () => boolean;
  /** Event-loop lag above which /healthz answers 503 (default 5 s). */
  maxLagMs?: number;
  host?: string;
}

/** Serves /metrics, /healthz and /readyz for a worker running in its own process. */
export async function serveMetrics(
  port: number,
  opts: WorkerProbeOptions = {},
): Promise<http.Server> {
  collectProcessMetrics();
  const maxLagMs = opts.maxLagMs ?? 5_000;
  const lag = watchEventLoopLag();
  const json = (res: http.ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server = http.createServer((req, res) => {
    const url = req.url?.split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
      return;
    }
    if (url === '/healthz') {
      const lagMs = lag.recentMaxMs();
      json(res, lagMs > maxLagMs ? 503 : 200, {
        status: lagMs > maxLagMs ? 'event_loop_blocked' : 'ok',
        event_loop_lag_ms: Math.round(lagMs),
      });
      return;
    }
    if (url === '/readyz') {
      const ready = opts.ready ? opts.ready() : true;
      json(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_polling' });
      return;
    }
    if (url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    metricsText().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  server.on('close', () => lag.stop());
  await new Promise<void>((resolve) => server.listen(port, opts.host ?? '0.0.0.0', resolve));
  return server;
}
