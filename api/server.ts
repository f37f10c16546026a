/** HTTP or, with a certificate configured, HTTPS (D21) serving of the app. */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import type { Config } from '../config';

export interface RunningServer {
  server: http.Server;
  url: string;
  close(): Promise<void>;
}

/** Listens on the configured host and port (0 picks a free one) and resolves with the base URL. */
export async function listen(app: Koa, config: Pick<Config, 'api'>): Promise<RunningServer> {
  const handler = app.callback();
  const { tls } = config.api;
  const server = tls
    ? https.createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, handler)
    : http.createServer(handler);
  // SSE streams are long-lived; the socket must not be cut by Node's default request timeout.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.api.port, config.api.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = config.api.host.includes(':') ? `[${config.api.host}]` : config.api.host;
  return {
    server,
    url: `${tls ? 'https' : 'http'}://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
