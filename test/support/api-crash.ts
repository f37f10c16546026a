/**
 * An API process killed (SIGKILL) right after one chosen write reached the database: its MongoDB
 * traffic goes through a proxy (test/support/mongo-proxy.ts) that forwards the matching message,
 * then holds everything after it, and the process is killed while it waits for that answer. What
 * the store holds then is what a crash at that point leaves; the suite's own API stands in for
 * the restarted one.
 */
import type { Config } from '../../config';
import { startApiProcess } from './api-process';
import { startMongoProxy } from './mongo-proxy';

/**
 * Starts an API on `config`'s database through the proxy, sends `request` to it and SIGKILLs it
 * once a message matching `point` went through. Rejects when the request ended first (the point
 * was never reached, so the test would show nothing).
 */
export async function killApiAfter(
  config: Config,
  env: Record<string, string>,
  point: (message: Buffer) => boolean,
  request: (url: string) => Promise<unknown>,
): Promise<void> {
  const proxy = await startMongoProxy(config.mongo.uri, point);
  const api = await startApiProcess(config, { env: { ...env, MONGODB_URI: proxy.uri } });
  try {
    // After the kill the request fails (its connection cut): that is expected.
    const sent = request(api.url).then(
      (answer) => ({ answer }),
      (err: Error) => ({ answer: `error: ${err.message}` }),
    );
    const ended = await Promise.race([proxy.frozen.then(() => undefined), sent]);
    if (ended)
      throw new Error(
        `the request ended before the crash point: ${JSON.stringify(ended.answer).slice(0, 300)}\n${api.output()}`,
      );
    await api.kill();
    await sent;
  } finally {
    await api.kill();
    await proxy.close();
  }
}
