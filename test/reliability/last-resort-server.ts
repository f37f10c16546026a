/**
 * A child process for test/reliability/last-resort.test.ts: the API's server (api/server.ts) and
 * last resort (api/last-resort.ts) around a small Koa app whose routes let an error escape the
 * request the ways a bug would: an 'error' event nobody listens for, a throw in a timer the
 * request started, a rejection nobody awaits, a throw after the answer's head went out. Prints
 * `LISTENING <url>` once it serves; its log lines (JSON) go to stdout.
 */
import { EventEmitter } from 'node:events';
import Koa from 'koa';
import { loadConfig } from '../../config';
import { createLogger } from '../../api/logger';
import { installLastResort } from '../../api/last-resort';
import { listen } from '../../api/server';

async function main(): Promise<void> {
  const config = loadConfig({ API_HOST: '127.0.0.1', API_PORT: '0' });
  const app = new Koa();
  app.use(async (ctx) => {
    switch (ctx.path) {
      case '/healthz':
        ctx.body = { status: 'ok' };
        return;
      case '/emit':
        // An emitter's 'error' with no listener, after the handler has returned.
        await new Promise<void>((resolve) => {
          setImmediate(() => new EventEmitter().emit('error', new Error('nobody listens')));
          setTimeout(resolve, 60_000).unref();
        });
        return;
      case '/throw-in-timer':
        await new Promise<void>(() => {
          setTimeout(() => {
            throw new Error('thrown in a timer of the request');
          }, 5);
        });
        return;
      case '/reject':
        void Promise.reject(new Error('nobody awaits this'));
        ctx.body = { status: 'answered' };
        return;
      case '/after-head':
        ctx.respond = false;
        ctx.res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        ctx.res.write(': open\n\n');
        setTimeout(() => {
          throw new Error('thrown after the head went out');
        }, 5);
        return;
    }
  });
  const running = await listen(app, config);
  installLastResort(createLogger('info', 'last-resort-test'));
  console.log(`LISTENING ${running.url}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
