import http from 'node:http';
import { collectProcessMetrics, metricsText } from '../lib/metrics';

/** Serves GET /metrics for a worker running in its own process (node attempts, retries, runs ended). */
export async function serveMetrics(port: number, host = '0.0.0.0'): Promise<http.Server> {
  collectProcessMetrics();
  const server = http.createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    metricsText().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return server;
}
