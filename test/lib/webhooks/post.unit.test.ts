/**
 * One webhook POST (lib/webhooks/post.ts): a receiver that answers nothing within the timeout
 * fails the attempt with words the account can act on, not the abort's own ("aborted").
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { postWebhook } from '../../../lib/webhooks/post';

describe('postWebhook', () => {
  let server: http.Server;
  let url: string;
  before(async () => {
    // Reads the request and never answers (its sockets are closed by `after`).
    server = http.createServer((req) => req.resume());
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
});
