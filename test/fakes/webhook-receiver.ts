/**
 * A webhook receiver for tests: records every request (path, headers, raw body) and answers
 * from a per-path script (status, headers, delay), then 200 once the script is used up.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedHook {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  /** Held this long before answering. */
  delayMs?: number;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  hits: ReceivedHook[];
  /** The requests that reached `path` (without the query string). */
  hitsOn(path: string): ReceivedHook[];
  /** Answers for the next requests to `path`, in order. */
  script(path: string, answers: ScriptedAnswer[]): void;
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const hits: ReceivedHook[] = [];
  const scripts = new Map<string, ScriptedAnswer[]>();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? '/').split('?')[0];
    hits.push({
      path,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: Date.now(),
    });
    const answer = scripts.get(path)?.shift() ?? { status: 200 };
    if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
    res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
    res.end(answer.status < 300 ? 'ok' : `scripted ${answer.status}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    hitsOn: (path) => hits.filter((h) => h.path === path),
    script: (path, answers) => scripts.set(path, [...answers]),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
