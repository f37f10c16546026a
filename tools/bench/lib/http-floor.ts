/**
 * P5's floor: a bare node:http server in its own process that answers every request with one
 * fixed JSON body, the size of a finished run's view, and the headers the API sets. It has no
 * Koa, no authentication, no D16 count and no cache lookup. Its p99 at the same concurrency is
 * the least any Node HTTP service answers in on this machine under the same load generator.
 */
import { spawn } from 'node:child_process';
import readline from 'node:readline';

const SERVER = `
const http = require('node:http');
const body = process.argv[1];
const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('x-ratelimit-limit', '1000000');
  res.setHeader('x-ratelimit-remaining', '999999');
  res.setHeader('x-ratelimit-reset', '30');
  res.end(body);
});
server.keepAliveTimeout = 65000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

/** Starts the floor server answering `body`; resolves with its URL and a stop function. */
export async function startHttpFloor(body: string): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, ['-e', SERVER, body], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const port = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the floor server exited (${code})`)));
  });
  lines.close();
  return { url: `http://127.0.0.1:${port.trim()}`, stop: () => child.kill() };
}
