// Traces (OpenTelemetry over OTLP/HTTP): with OTEL_EXPORTER_OTLP_ENDPOINT set, one trace runs from
// the API's `POST /api/v1/responses` through the workflow start, the workflow and its activity to
// the provider call, each span the child of the one before; no span holds the run's inputs or prompt.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from '@temporalio/worker';
import { payloadProtection } from '../../../lib/codec/data-converter';
import { promptWorkflow, publish, waitForRun } from '../../support/fixtures';
import { startRun } from '../../support/runs';
import { temporalClient } from '../../support/service';
import { testStack } from '../../support/stack';
import { useService } from '../../support/use-service';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** A local OTLP/HTTP receiver: collects the spans of every JSON export request to /v1/traces. */
async function startOtlpReceiver() {
  const spans: Span[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      assert.match(String(req.headers['content-type']), /application\/json/);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Span[] }> }>;
      };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Waits (polling, up to `ms`) until `find` returns something. */
async function waitFor<T>(find: () => T | undefined, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('observability: traces from the API request to the provider call', function () {
  this.timeout(60_000);
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  const ctx = useService({
    fakeOpenAI: true,
    env: () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
  });
  after(async () => receiver?.close());

  it('links POST /api/v1/responses, the start, the workflow, the activity and the provider call in one trace', async () => {
    const PROMPT = 'Secret-prompt-7f3a';
    const TOPIC = 'customer-topic-91bc';
    await publish(ctx.svc.url, ctx.key, promptWorkflow('traced', PROMPT));
    const runId = await startRun(ctx.svc.url, ctx.key, 'traced', { topic: TOPIC });
    const run = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    // The provider was called with the customer's text: the test's secret did leave for the provider.
    assert.ok(ctx.fake.requestsWith(TOPIC).length >= 1);

    const spans = receiver.spans;
    const byId = (id: string | undefined) => spans.find((s) => s.spanId === id);
    const provider = await waitFor(
      () => spans.find((s) => s.name === 'provider POST'),
      15_000,
      'the provider call span',
    );
    // Walk up from the provider call: every parent was received, and the root is the request.
    const chain: Span[] = [provider];
    await waitFor(
      () => {
        for (;;) {
          const top = chain[chain.length - 1];
          if (!top.parentSpanId) return true;
          const parent = byId(top.parentSpanId);
          if (!parent) return undefined;
          chain.push(parent);
        }
      },
      15_000,
      'the provider span’s ancestors',
    );
    const names = chain.map((s) => s.name).reverse();
    assert.equal(names[0], 'POST /api/v1/responses', names.join(' > '));
    for (const expected of [
      /^StartWorkflow:/,
      /^RunWorkflow:/,
      /^StartActivity:/,
      /^RunActivity:/,
      /^provider POST$/,
    ]) {
      assert.ok(
        names.some((n) => expected.test(n)),
        `${String(expected)} in ${names.join(' > ')}`,
      );
    }
    // In order: request > start > workflow > … > activity start > activity > provider call.
    const at = (re: RegExp) => names.findIndex((n) => re.test(n));
    assert.ok(at(/^StartWorkflow:/) < at(/^RunWorkflow:/));
    assert.ok(at(/^RunWorkflow:/) < at(/^StartActivity:/));
    assert.ok(at(/^StartActivity:/) < at(/^RunActivity:/));
    assert.equal(at(/^provider POST$/), names.length - 1);
    assert.equal(new Set(chain.map((s) => s.traceId)).size, 1, 'one trace id');
    const server = chain[chain.length - 1];
    assert.equal(server.kind, 2, 'the request span is a SERVER span');
    const attr = (s: Span, key: string) => s.attributes.find((a) => a.key === key)?.value;
    assert.deepEqual(attr(server, 'http.route'), { stringValue: '/api/v1/responses' });
    assert.equal(provider.kind, 3, 'the provider span is a CLIENT span');
    assert.deepEqual(attr(provider, 'server.address'), {
      stringValue: new URL(ctx.fake.baseUrl).origin,
    });

    // Low-cardinality, known attributes only: none of the WorkflowInfo the SDK's sink copies
    // onto workflow spans (memo, search attributes, last result) gets through.
    const keys = new Set(spans.flatMap((s) => s.attributes.map((a) => a.key)));
    const allowed = new Set([
      ...['http.request.method', 'http.route', 'http.response.status_code', 'server.address'],
      ...['wrs.provider', 'run_id', 'temporalWorkflowId', 'temporalActivityId'],
      ...['workflowType', 'workflowId', 'runId', 'taskQueue', 'namespace', 'attempt'],
    ]);
    assert.deepEqual(
      [...keys].filter((k) => !allowed.has(k)),
      [],
      'unexpected span attributes',
    );
    for (const s of spans)
      for (const a of s.attributes)
        assert.ok(!('kvlistValue' in a.value || 'arrayValue' in a.value), `${a.key} is scalar`);

    // No customer data in any span received: neither the inputs nor the workflow's prompt.
    const exported = JSON.stringify(spans);
    assert.ok(!exported.includes(TOPIC), 'an input value is in a span');
    assert.ok(!exported.includes(PROMPT), 'the prompt is in a span');
  });

  it('a traced run replays on the workflow code, its tracing interceptors active (same commands)', async () => {
    await publish(ctx.svc.url, ctx.key, promptWorkflow('traced-replay', 'Say'));
    const runId = await startRun(ctx.svc.url, ctx.key, 'traced-replay', { topic: 'x' });
    assert.equal((await waitForRun(ctx.svc.url, ctx.key, runId)).status, 'completed');
    const history = await temporalClient(ctx.svc).workflow.getHandle(runId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    assert.ok(started?.header?.fields?.['_tracer-data'], 'the start carries the trace context');
    await Worker.runReplayHistory(
      {
        workflowBundle: (await testStack()).bundle,
        dataConverter: payloadProtection(ctx.svc.config, ctx.svc.store.db).dataConverter,
        replayName: 'traced',
        // Replay sends no spans: the sink is only there because the workflow's spans look it up.
        sinks: { exporter: { export: { fn: () => undefined } } },
      },
      history,
      runId,
    );
  });
});
