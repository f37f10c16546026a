/**
 * A loopback HTTP server that answers 500 to every request and counts them: an `http_request`
 * node's endpoint that is down, for tests of what its retries count and cost.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FailingServer {
  /** `http://127.0.0.1:<port>/down`; any path under it fails the same. */
  url: string;
  hits(): number;
  close(): Promise<void>;
}

export async function startFailingServer(): Promise<FailingServer> {
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    req.resume();
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"error":"down"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/down`,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
