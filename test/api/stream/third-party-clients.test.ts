// Third-party clients work unchanged against the real service. npm `eventsource` 4 (what a
// browser's EventSource does) stops after `[DONE]` because its reconnect at the terminal event is
// answered 204, and follows a D34 stream link with no Authorization header; the OpenAI Node SDK's
// generic streaming request parses every event and stops at `[DONE]`.
import assert from 'node:assert/strict';
import { EventSource, type FetchLike } from 'eventsource';
import OpenAI from 'openai';
import { WrsClient } from '../../../clients/typescript';
import { RETRY_MS } from '../../../api/stream/sse';
import { greetingWorkflow, publish } from '../../support/fixtures';
import { call, waitFor } from '../../support/http';
import { rawRequest } from '../../support/raw-http';
import { useService } from '../../support/use-service';
import { storedLog } from '../../support/runs';

/** What one EventSource saw: its messages, each connection's status and Authorization, how it ended. */
interface Followed {
  messages: Array<{ id: string; data: string }>;
  connections: Array<{ status: number; lastEventId: string | null; authorization: string | null }>;
}

/** Follows `url` with an EventSource until it gives up for good (readyState CLOSED). */
function follow(url: string, headers: Record<string, string> = {}): Promise<Followed> {
  const seen: Followed = { messages: [], connections: [] };
  const counted: FetchLike = async (input, init) => {
    const merged = { ...init, headers: { ...init.headers, ...headers } };
    const res = await fetch(input, merged);
    const sent = new Headers(merged.headers as Record<string, string>);
    seen.connections.push({
      status: res.status,
      lastEventId: sent.get('last-event-id'),
      authorization: sent.get('authorization'),
    });
    return res;
  };
  return new Promise((resolve, reject) => {
    const source = new EventSource(url, { fetch: counted });
    const timer = setTimeout(() => {
      source.close();
      reject(new Error(`EventSource still open after 30 s: ${JSON.stringify(seen)}`));
    }, 30_000);
    source.onmessage = (e) => seen.messages.push({ id: e.lastEventId, data: e.data });
    source.onerror = () => {
      if (source.readyState !== EventSource.CLOSED) return; // reconnecting: wait
      clearTimeout(timer);
      resolve(seen);
    };
  });
}

describe('third-party stream clients', function () {
  this.timeout(60_000);
  const ctx = useService();

  before(async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('greet'));
  });

  const finishedRun = async (name: string) => {
    const start = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'greet', inputs: { name } },
    });
    assert.equal(start.status, 202, JSON.stringify(start.body));
    return {
      runId: start.body.run_id as string,
      log: await storedLog(ctx.svc.store.collections, start.body.run_id),
    };
  };

  it('eventsource 4 stops after [DONE]: its reconnect with the terminal event’s id gets 204', async () => {
    const { runId, log } = await finishedRun('Ada');
    const t0 = Date.now();
    const seen = await follow(`${ctx.svc.url}/api/v1/runs/${runId}/stream?starting_after=0`, {
      Authorization: `Bearer ${ctx.key}`,
    });
    const terminal = String(log.length - 1);
    assert.deepEqual(
      seen.connections.map((c) => [c.status, c.lastEventId]),
      [
        [200, null],
        [204, terminal],
      ],
      'one stream, one reconnect answered 204, nothing more',
    );
    const data = seen.messages.filter((m) => m.data !== '[DONE]');
    assert.deepEqual(
      data.map((m) => JSON.parse(m.data).type),
      ['response.resumed', ...log.slice(1).map((e: any) => e.type)],
    );
    assert.equal(seen.messages.at(-1)!.data, '[DONE]');
    // It waited the `retry:` the stream sent (not its own 3 s default) before the reconnect.
    assert.ok(Date.now() - t0 >= RETRY_MS, `${Date.now() - t0} ms`);
  });

  it('eventsource 4 follows a D34 stream link without Authorization, resuming with Last-Event-ID', async () => {
    const { runId, log } = await finishedRun('Bea');
    // The backend mints the link with its key (the TypeScript client) ...
    const backend = new WrsClient({ baseUrl: ctx.svc.url, apiKey: ctx.key });
    const link = await backend.streamLink(runId, { ttlSeconds: 120 });
    const expires = Date.parse(link.expires_at);
    assert.ok(expires > Date.now() + 100_000 && expires <= Date.now() + 121_000, link.expires_at);
    assert.equal(new URL(link.url).pathname, `/streams/${runId}`);
    // ... and the browser follows it with a plain EventSource, which sends no header of its own.
    const seen = await follow(link.url);
    assert.ok(seen.connections.every((c) => c.authorization === null));
    // Without a cursor: "from now on", which for a finished run is its terminal event (spec rule 3).
    assert.deepEqual(
      seen.connections.map((c) => [c.status, c.lastEventId]),
      [
        [200, null],
        [204, String(log.length - 1)],
      ],
    );
    assert.deepEqual(
      seen.messages.map((m) => (m.data === '[DONE]' ? m.data : JSON.parse(m.data).type)),
      ['response.resumed', 'response.completed', '[DONE]'],
    );
    // The link opens only its own run's stream, and not once tampered with.
    const other = await finishedRun('Cy');
    const swapped = link.url.replace(runId, other.runId);
    const refused = await fetch(swapped);
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as any).error.code, 'invalid_signature');
    const stretched = await fetch(
      link.url.replace(/expires=\d+/, `expires=${Math.floor(expires / 1000) + 3600}`),
    );
    assert.equal(stretched.status, 403);
    // Last-Event-ID resumes through the link as on the keyed route.
    const resumed = await fetch(link.url, { headers: { 'Last-Event-ID': String(log.length - 2) } });
    assert.equal(resumed.status, 200);
    assert.match(await resumed.text(), /"type":"response\.completed"[\s\S]*data: \[DONE\]/);
  });

  it('a stream link lasts an hour at most and is refused once expired', async () => {
    const { runId } = await finishedRun('Di');
    const tooLong = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
      body: { ttl_seconds: 3601 },
    });
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.error.param, 'ttl_seconds');
    const bare = await fetch(`${ctx.svc.url}/api/v1/runs/${runId}/stream-link`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.key}` },
    });
    assert.equal(bare.status, 200);
    const hour = (await bare.json()) as { expires_at: string };
    assert.ok(
      Math.abs(Date.parse(hour.expires_at) - Date.now() - 3_600_000) < 5_000,
      hour.expires_at,
    );
    // No body is the default; a JSON body that is not an object is a 400 like any wrong type (schemathesis found `null` accepted).
    const nullBody = await fetch(`${ctx.svc.url}/api/v1/runs/${runId}/stream-link`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
      body: 'null',
    });
    assert.equal(nullBody.status, 400);
    // An empty body is no body, whatever its Content-Type (a client that always sends one).
    const empty = await fetch(`${ctx.svc.url}/api/v1/runs/${runId}/stream-link`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
      body: '',
    });
    assert.equal(empty.status, 200);
    await empty.arrayBuffer();
    // So is a request with neither Content-Length nor Transfer-Encoding, which has no body in
    // HTTP/1.1 (what `curl -X POST -H 'Content-Type: application/json'` sends): it was 400 invalid_json.
    const { host } = new URL(ctx.svc.url);
    const unframed = await rawRequest(
      ctx.svc.url,
      `POST /api/v1/runs/${runId}/stream-link HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.key}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(unframed.status, 200, JSON.stringify(unframed.body));
    const noKey = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {});
    assert.equal(noKey.status, 401);
    const other = await ctx.newAccount();
    assert.equal(
      (await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, { key: other.key }))
        .status,
      404,
    );
    const short = await call(ctx.svc.url, 'POST', `/api/v1/runs/${runId}/stream-link`, {
      key: ctx.key,
      body: { ttl_seconds: 1 },
    });
    await waitFor(
      async () => (Date.now() > Date.parse(short.body.expires_at) + 1_000 ? true : undefined),
      { timeoutMs: 5_000 },
    );
    const expired = await fetch(short.body.url);
    assert.equal(expired.status, 403);
    assert.equal(((await expired.json()) as any).error.code, 'url_expired');
  });

  it('the OpenAI Node SDK’s generic streaming request parses every event and stops at [DONE]', async () => {
    const openai = new OpenAI({ baseURL: `${ctx.svc.url}/api/v1`, apiKey: ctx.key, maxRetries: 0 });
    const stream = await openai.post<unknown>('/responses', {
      body: { workflowId: 'greet', stream: true, inputs: { name: 'Ed' } },
      stream: true,
    });
    const received: any[] = [];
    for await (const event of stream as unknown as AsyncIterable<any>) received.push(event);
    assert.deepEqual(
      received.map((e) => e.sequence_number),
      received.map((_, i) => i),
    );
    assert.equal(received[0].type, 'response.created');
    assert.equal(received.at(-1).type, 'response.completed');
    // The stream ends with the run's terminal state; the record is finalized just after.
    assert.deepEqual(
      received,
      await storedLog(ctx.svc.store.collections, received[0].response.run_id),
    );
  });
});
