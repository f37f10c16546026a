/**
 * One webhook POST (lib/webhooks/post.ts): a receiver that answers nothing within the timeout
 * fails the attempt with words the account can act on, not the abort's own ("aborted"); one that
 * answers its status and then trickles its body is judged by its status.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { postWebhook } from '../../../lib/webhooks/post';

describe('postWebhook', () => {
  let server: http.Server;
  let url: string;
  before(async () => {
    // /hook reads the request and never answers; /trickle answers its status and then a byte now
    // and then, never ending (their sockets are closed by `after`).
    server = http.createServer((req, res) => {
      req.resume();
      const status = Number(new URL(req.url!, 'http://x').searchParams.get('status'));
      if (!req.url!.startsWith('/trickle')) return;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.write('a');
      const timer = setInterval(() => res.write('a'), 50);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('names the timeout when the receiver does not answer in time', async () => {
    await assert.rejects(
      postWebhook(url, '{}', { allowHttp: true, allowPrivate: true, headers: {}, timeoutMs: 200 }),
      { message: 'no answer within 200 ms (WEBHOOK_TIMEOUT_MS)' },
    );
  });

  it('takes a 2xx as delivered at once, and keeps a failure’s status, however long the body trickles', async () => {
    const post = (status: number) =>
      postWebhook(url.replace('/hook', `/trickle?status=${status}`), '{}', {
        allowHttp: true,
        allowPrivate: true,
        headers: {},
        timeoutMs: 300,
      });
    assert.deepEqual(await post(200), { status: 200, answer: '' }); // before: "no answer within 300 ms"
    const failed = await post(500);
    assert.equal(failed.status, 500);
    assert.match(failed.answer, /^a+$/);
  });
});
