/**
 * The store round-trip budget of the hot paths (docs/architecture.md "Store round
 * trips"), counted with the driver's command monitoring on the API's own MongoDB client. Steady
 * state means a warm process: the same key, workflow and account used a moment before.
 */
import assert from 'node:assert/strict';
import { startApi, type ApiHandle } from '../../api/start-api';
import { createLogger } from '../../api/logger';
import {
  logCommands,
  describeCommands,
  type CommandLog,
  type StoreCommand,
} from '../../store/round-trips';
import { greetingWorkflow, llmWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { POINTER_TTL_MS } from '../../api/workflows/workflow-catalog';
import { useService } from '../support/use-service';

/** The shared D16 batch write every authenticated request makes (or joins). */
const isRateLimitWrite = (c: StoreCommand) =>
  c.collection === 'rate_limits' && c.name === 'findAndModify';

/** Timers and the cache's clock (the API's performance.now(), ours Date.now()) may differ by this much. */
const TIMER_SLACK_MS = 50;

describe('store round trips of the hot paths', function () {
  this.timeout(120_000);
  const ctx = useService({ fakeOpenAI: true, monitorCommands: true });
  let other: ApiHandle;
  let commands: CommandLog;
  let otherCommands: CommandLog;

  before(async () => {
    // A second API on the same store and Temporal: "another process" to every per-process cache.
    other = await startApi(ctx.svc.config, createLogger('silent'), { monitorCommands: true });
    commands = logCommands(ctx.svc.api.store.client);
    otherCommands = logCommands(other.store.client);
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('rt-greet'));
    await publish(ctx.svc.url, ctx.key, llmWorkflow('rt-slow'));
  });
  after(async () => {
    commands?.stop();
    otherCommands?.stop();
    await other?.close();
  });

  const start = async (url: string, workflowId: string, inputs: object) => {
    const res = await call(url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId, inputs },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return res.body;
  };

  it('start: one write (the run) besides the rate-limit write, no read', async () => {
    await start(ctx.svc.url, 'rt-greet', { name: 'warm' }); // warms key, workflow, version and credit
    commands.take();
    await start(ctx.svc.url, 'rt-greet', { name: 'counted' });
    const seen = commands.take();
    const budget = seen.filter((c) => !isRateLimitWrite(c));
    assert.deepEqual(
      budget,
      [{ name: 'insert', collection: 'runs', write: true }],
      describeCommands(seen),
    );
    assert.ok(seen.filter(isRateLimitWrite).length <= 1, describeCommands(seen));
  });

  it('start with Idempotency-Key: its claim is the one write more (D18)', async () => {
    await start(ctx.svc.url, 'rt-greet', { name: 'warm' });
    commands.take();
    const res = await call(ctx.svc.url, 'POST', '/api/v1/responses', {
      key: ctx.key,
      body: { workflowId: 'rt-greet', inputs: { name: 'once' } },
      headers: { 'idempotency-key': `rt-${Date.now()}` },
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const seen = commands.take();
    assert.deepEqual(
      seen.filter((c) => !isRateLimitWrite(c)).map((c) => `${c.name} ${c.collection}`),
      ['insert idempotency_keys', 'insert runs'],
      describeCommands(seen),
    );
  });

  it('GET of a finished run: no round trip after its first read here', async () => {
    const { run_id: runId } = await start(ctx.svc.url, 'rt-greet', { name: 'done' });
    await waitForRun(ctx.svc.url, ctx.key, runId); // reads it, finished, once
    commands.take();
    const again = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(again.body.status, 'completed');
    const seen = commands.take();
    assert.deepEqual(
      seen.filter((c) => !isRateLimitWrite(c)),
      [],
      describeCommands(seen),
    );
  });

  it('GET of a live run: no round trip where it started, one first read in another process, then none', async () => {
    const { run_id: runId } = await start(ctx.svc.url, 'rt-slow', { topic: 'slow:4000 hold' });
    await waitFor(
      async () =>
        (await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key })).body.status ===
        'running'
          ? true
          : undefined,
      {
        what: 'the run to be running',
      },
    );
    commands.take();
    const here = await call(ctx.svc.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(here.body.status, 'running');
    let seen = commands.take();
    assert.deepEqual(
      seen.filter((c) => !isRateLimitWrite(c)),
      [],
      describeCommands(seen),
    );

    // The other process knows the key (and not the run) from a request a moment ago.
    assert.equal(
      (await call(other.url, 'GET', '/api/v1/workflows/rt-slow', { key: ctx.key })).status,
      200,
    );
    otherCommands.take();
    const first = await call(other.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(first.body.status, 'running');
    seen = otherCommands.take();
    assert.deepEqual(
      seen.filter((c) => !isRateLimitWrite(c)).map((c) => `${c.name} ${c.collection}`),
      ['find runs'],
      describeCommands(seen),
    );
    const second = await call(other.url, 'GET', `/api/v1/runs/${runId}`, { key: ctx.key });
    assert.equal(second.body.status, 'running');
    seen = otherCommands.take();
    assert.deepEqual(
      seen.filter((c) => !isRateLimitWrite(c)),
      [],
      describeCommands(seen),
    );

    // Another account's key never reads it, from either process's memory.
    const stranger = await ctx.newAccount();
    for (const url of [ctx.svc.url, other.url]) {
      const res = await call(url, 'GET', `/api/v1/runs/${runId}`, { key: stranger.key });
      assert.equal(res.status, 404, JSON.stringify(res.body));
    }
    const ended = await waitForRun(ctx.svc.url, ctx.key, runId);
    assert.equal(ended.status, 'completed');
  });

  it('D1: the publishing process starts the new version at once, another within 2 s', async () => {
    await publish(ctx.svc.url, ctx.key, greetingWorkflow('rt-d1', 'Hi'));
    // Both processes have the pointer to version 1 cached, loaded by `cachedBy` at the latest.
    for (const url of [ctx.svc.url, other.url])
      assert.equal(
        (await call(url, 'GET', '/api/v1/workflows/rt-d1', { key: ctx.key })).body.version,
        1,
      );
    const cachedBy = Date.now();
    const published = await call(other.url, 'POST', '/api/v1/workflows', {
      key: ctx.key,
      body: greetingWorkflow('rt-d1', 'Ho'),
    });
    assert.equal(published.status, 201);
    const run = await start(other.url, 'rt-d1', { name: 'x' });
    assert.equal(
      run.published_workflow_version_id,
      published.body.version_id,
      'the publishing process runs the new version',
    );
    // Every read the other process gets POINTER_TTL_MS after it cached version 1 sees version 2.
    // Reads are timed by when they were sent, so a busy machine's slow answers cannot fail it.
    const expired = cachedBy + POINTER_TTL_MS + TIMER_SLACK_MS;
    await waitFor(
      async () => {
        const sent = Date.now();
        const { version } = (
          await call(ctx.svc.url, 'GET', '/api/v1/workflows/rt-d1', { key: ctx.key })
        ).body;
        if (version === 2) return true;
        assert.ok(sent < expired, `version ${version}, asked ${sent - cachedBy} ms after caching`);
        return undefined;
      },
      { intervalMs: 100, what: 'the other process to see version 2' },
    );
    const later = await start(ctx.svc.url, 'rt-d1', { name: 'y' });
    assert.equal(later.published_workflow_version_id, published.body.version_id);
  });
});
