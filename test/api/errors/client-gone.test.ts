/**
 * A body its client cut off (the connection closed before the body's end) is the client's doing,
 * whichever reader met it (api/errors/client-gone.ts; docs/api.md "Errors", docs/deploy.md
 * "Monitoring"): a JSON body is 400 `request_interrupted`, an upload 400 `upload_interrupted`,
 * counted so in wrs_http_requests_total and logged at debug only. A JSON body's was a 500 with an
 * error line and a stack, so one key's cut-off requests could fire WrsApiErrorRateHigh.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import type { DestinationStream } from 'pino';
import { waitFor } from '../../support/http';
import type { TestService } from '../../support/service';
import { useService } from '../../support/use-service';

/** The value of one sample line of the exposition text (0 when absent). */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

/**
 * Sends `head` and `part` of a body on a connection of its own, and closes it once the API's body
 * reader has taken in some of it (the request is past its key check and rate limit, in jsonBody).
 */
async function cutOff(svc: TestService, path: string, head: string, part: string): Promise<void> {
  const served = new Promise<{ req: IncomingMessage; res: ServerResponse }>((resolve) => {
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.split('?')[0] !== path) return;
      svc.api.server.off('request', onRequest);
      resolve({ req, res });
    };
    svc.api.server.on('request', onRequest);
  });
  const { hostname, port } = new URL(svc.url);
  const socket = net.connect(Number(port), hostname, () => socket.write(head + part));
  socket.on('error', () => undefined);
  const { req } = await served;
  await waitFor(async () => req.readableDidRead || undefined, { what: 'the body reader to read' });
  socket.destroy();
}

describe('a client that goes away mid-body', function () {
  this.timeout(60_000);
  const lines: string[] = [];
  const destination: DestinationStream = { write: (line: string) => void lines.push(line) };
  const ctx = useService({
    worker: false,
    logDestination: destination,
    env: { LOG_LEVEL: 'debug' },
  });

  it("is the client's 400 in the metrics and the debug line, never a 500 or an error line: JSON bodies and uploads alike", async () => {
    const auth = `Authorization: Bearer ${ctx.key}\r\n`;
    const cases = [
      // A body of a declared length, and a chunked one, each cut in its middle.
      {
        route: '/api/v1/responses',
        head: `POST /api/v1/responses HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
        part: `{"workflowId":"greet","inputs":{"name":"${'a'.repeat(2000)}`,
      },
      {
        route: '/api/v1/workflows',
        head: `POST /api/v1/workflows HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
        part: `100\r\n{"slug":"x","nodes":[${' '.repeat(240)}\r\n`,
      },
      // Uploads, raw and a multipart form.
      {
        route: '/api/v1/files',
        head: `POST /api/v1/files?name=a.txt HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: text/plain\r\nContent-Length: 100000\r\n\r\n`,
        part: 'a'.repeat(2000),
        code: 'upload_interrupted',
      },
      {
        route: '/api/v1/files',
        head: `POST /api/v1/files HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: multipart/form-data; boundary=BB\r\nContent-Length: 100000\r\n\r\n`,
        part: `--BB\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${'a'.repeat(2000)}`,
        code: 'upload_interrupted',
      },
    ];
    const scrape = async () => (await fetch(`${ctx.svc.url}/metrics`)).text();
    const count = (text: string, route: string, code: string) =>
      sample(text, 'wrs_http_requests_total', `{method="POST",route="${route}",code="${code}"}`);
    const routes = [...new Set(cases.map((c) => c.route))];
    const sent = (route: string) => cases.filter((c) => c.route === route).length;
    const before = await scrape();
    const mark = lines.length;
    for (const { route, head, part } of cases) await cutOff(ctx.svc, route, head, part);
    // Counted once its answer is settled, after the socket closed.
    const delta = (text: string, route: string, code: string) =>
      count(text, route, code) - count(before, route, code);
    const after = await waitFor(
      async () => {
        const text = await scrape();
        const settled = routes.every(
          (route) => delta(text, route, '400') + delta(text, route, '500') >= sent(route),
        );
        return settled ? text : undefined;
      },
      { what: 'the cut-off requests counted' },
    );
    for (const route of routes) {
      assert.equal(delta(after, route, '500'), 0, route);
      assert.equal(delta(after, route, '400'), sent(route), route);
    }
    const written = lines.slice(mark).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      written.filter((l) => Number(l.level) >= 50).map((l) => l.msg),
      [],
      'no error line',
    );
    const requestLines = written.filter(
      (l) => l.msg === 'request' && routes.some((route) => l.path === route),
    );
    assert.deepEqual(
      requestLines.map((l) => `${l.path} ${l.level} ${l.status} ${l.code}`).sort(),
      cases.map((c) => `${c.route} 20 400 ${c.code ?? 'request_interrupted'}`).sort(),
    );
  });
});
