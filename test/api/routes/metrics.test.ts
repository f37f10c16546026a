// Prometheus metrics change after a run.
import assert from 'node:assert/strict';
import { llmWorkflow, rowsWorkflow } from '../../support/fixtures';
import { runToEnd } from '../../support/runs';
import { call, waitFor } from '../../support/http';
import { openSse } from '../../support/sse';
import { useService } from '../../support/use-service';

/** The value of one sample line of the exposition text (0 when absent). */
function sample(text: string, name: string, labels = ''): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const flakyLlm = llmWorkflow('flaky');

describe('metrics', function () {
  this.timeout(60_000);
  const ctx = useService({ fakeOpenAI: true, account: false });

  it('counts starts, ends, node attempts and retries, queries and open streams', async () => {
    const { key } = await ctx.newAccount();
    assert.equal(
      (await call(ctx.svc.url, 'POST', '/api/v1/workflows', { key, body: flakyLlm })).status,
      201,
    );
    const scrape = async () => {
      const res = await fetch(`${ctx.svc.url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /^text\/plain/);
      return res.text();
    };
    const before = await scrape();

    const stream = await openSse(`${ctx.svc.url}/api/v1/responses`, {
      method: 'POST',
      key,
      body: { workflowId: 'flaky', stream: true, inputs: { topic: 'flaky:metrics:1 slow:300' } },
    });
    await stream.until((f) => f.event?.type === 'response.created');
    const during = await scrape();
    assert.equal(sample(during, 'wrs_active_streams') - sample(before, 'wrs_active_streams'), 1);
    await stream.closed;

    const after = await waitFor(async () => {
      const text = await scrape();
      return sample(text, 'wrs_runs_ended_total', '{status="completed"}') >
        sample(before, 'wrs_runs_ended_total', '{status="completed"}')
        ? text
        : undefined;
    });
    const delta = (name: string, labels = '') =>
      sample(after, name, labels) - sample(before, name, labels);
    assert.equal(delta('wrs_runs_started_total', '{mode="stream"}'), 1);
    assert.equal(delta('wrs_runs_ended_total', '{status="completed"}'), 1);
    assert.equal(delta('wrs_node_attempts_total', '{type="llm"}'), 2); // one 503, one success
    assert.equal(delta('wrs_node_retries_total', '{type="llm"}'), 1);
    assert.ok(delta('wrs_start_duration_seconds_count') >= 1);
    assert.ok(delta('wrs_temporal_query_duration_seconds_count', '{outcome="ok"}') >= 1);
    assert.equal(sample(after, 'wrs_active_streams'), sample(before, 'wrs_active_streams'));
    assert.match(after, /wrs_process_resident_memory_bytes \d+/);
  });

  it("counts a big run's rows called again in their block as retries of its node type (D35)", async () => {
    const { key } = await ctx.newAccount();
    const scrape = async () => (await fetch(`${ctx.svc.url}/metrics`)).text();
    const before = await scrape();
    // Concurrency 2: six rows are a big node, run in one block; rows 1 and 4 fail once each.
    const rows = Array.from({ length: 6 }, (_, i) =>
      i === 1 || i === 4 ? `flaky:rowretry${i}:1 r${i}` : `rowretry r${i}`,
    );
    const doc = rowsWorkflow('metrics-rows', '{{row}}', { concurrency: 2 });
    const run = await runToEnd(ctx.svc.url, key, doc, { rows });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const after = await scrape();
    const delta = (name: string, labels: string) =>
      sample(after, name, labels) - sample(before, name, labels);
    assert.equal(delta('wrs_node_attempts_total', '{type="llm"}'), 8); // six rows, two called again
    assert.equal(delta('wrs_node_retries_total', '{type="llm"}'), 2);
  });
});
