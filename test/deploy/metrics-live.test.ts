// The metrics the dashboard and the alert rules query exist in what the service exports after a run: the API's
// /metrics, the production worker's own port (WORKER_METRICS_PORT) and the Temporal SDK's (WORKER_SDK_METRICS_PORT).
// The run calls the fake provider, so every family (HTTP requests, runs, provider calls, the server-side backlog
// and dependency gauges) has samples; names that come from other exporters (the Temporal server, the certificate
// probe, the backup textfile, Prometheus's own `up`) are listed below and checked by nothing here.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../tools/stack/ports';
import { llmWorkflow } from '../support/fixtures';
import { waitFor } from '../support/http';
import { runToEnd } from '../support/runs';
import { useService } from '../support/use-service';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { REPO, readYaml } from '../support/deploy';
import { queryPrometheus, startPrometheus, type RunningServer } from './prometheus-support';

/** Series other exporters provide (docker-compose.yml / the Temporal server), not the API or the workers. */
const EXTERNAL = new Set([
  'up',
  'service_requests',
  'service_error_with_type',
  'probe_ssl_earliest_cert_expiry',
  'wrs_backup_last_success_timestamp_seconds',
  'caddy_reverse_proxy_upstreams_healthy',
  'pg_up',
  // The SDK exports a counter only once it first counts: this one after a failed workflow task (a
  // nondeterminism error), which a healthy run never has. Its name follows the SDK's counters above
  // (temporal_request_total ...); its rule is unit-tested with promtool (alerts.test.ts).
  'temporal_workflow_task_execution_failed_total',
]);
/** The SDK's histograms the dashboard reads (a run's end is a local activity). */
const SDK_HISTOGRAMS = [
  'temporal_workflow_task_schedule_to_start_latency_seconds',
  'temporal_activity_schedule_to_start_latency_seconds',
  'temporal_local_activity_execution_latency_seconds',
];
/** The API's counters behind its panels (the API is scraped on a slower beat of its own, below). */
const API_COUNTERS = [
  'wrs_runs_started_total',
  'wrs_start_duration_seconds_count',
  'wrs_temporal_query_duration_seconds_count',
  'wrs_http_requests_total',
];
const PRICES = JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } });

/** Metric names an expression reads: identifiers followed by `{`, `[` or `)` or standing alone, less PromQL words. */
function metricNames(expr: string): string[] {
  const words = new Set([
    'sum', 'by', 'rate', 'histogram_quantile', 'max', 'min', 'absent', 'clamp_min', 'topk', 'time',
    'le', 'and', 'or', 'unless', 'on', 'ignoring', 'without', 'increase', 'count', 'avg', 'bool',
  ]); // prettier-ignore
  const noLabels = expr.replace(/\{[^}]*\}/g, '{}').replace(/"[^"]*"/g, '""');
  return [...noLabels.matchAll(/\b([a-z_][a-z0-9_]*)\b(?!\s*\()/g)]
    .map((m) => m[1])
    .filter((w) => !words.has(w) && !/^\d/.test(w) && w.includes('_') !== false)
    .filter((w) => !/^(route|code|status|status_class|task_type|provider|outcome|mode|type|job|instance|dependency|worker_type|operation|error_type|severity|failure_reason|task_queue)$/.test(w))
    .map((w) => w.replace(/_(bucket|sum|count)$/, '')); // prettier-ignore
}

/**
 * Panels (by title, and target index) that have no series on a healthy stack of this test: the Temporal server's
 * own metrics (the dev server's metrics port is not scraped here), and retries (none happen).
 */
const EMPTY_HERE = new Set([
  'Temporal server requests /s by operation#0',
  'Temporal server errors /s by type#0',
  'Node attempts and retries /s by type#1',
]);

const dashboard = () =>
  JSON.parse(fs.readFileSync(path.join(REPO, 'deploy/grafana/dashboards/wrs.json'), 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };

describe('metrics the dashboard and the alerts query, against a live API and worker', function () {
  this.timeout(180_000);
  const ctx = useService({ fakeOpenAI: true, worker: false, env: { PRICES } });
  let worker: WorkerProcess;
  let ports: { own: number; sdk: number };
  let prometheus: RunningServer | undefined;
  after(async () => {
    await worker?.kill();
    await prometheus?.server.kill();
  });

  before(async function () {
    this.timeout(40 * 60_000); // a Go build of Prometheus when tools/stack/install.ts has not built it yet
    ports = { own: await freePort(), sdk: await freePort() };
    worker = startWorkerProcess(ctx.svc.config, {
      env: {
        WORKER_METRICS_PORT: String(ports.own),
        WORKER_SDK_METRICS_PORT: String(ports.sdk),
        OPENAI_BASE_URL: ctx.fake.baseUrl,
        PRICES,
      },
    });
    // A real Prometheus scrapes the three endpoints under the job names of deploy/prometheus/prometheus.yml,
    // from before the run on, so the panels' rates and quantiles see it happen.
    const job = (name: string, target: string, every?: string) => ({
      job_name: name,
      static_configs: [{ targets: [target] }],
      // A scrape's timeout is at most its interval: the API's scrape asks Temporal about four task
      // queues at once (each call bounded by 2 s), which beside other test files takes over 1 s.
      ...(every ? { scrape_interval: every, scrape_timeout: every } : {}),
    });
    prometheus = await startPrometheus({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      scrape_configs: [
        job('wrs-api', new URL(ctx.svc.url).host, '3s'),
        job('wrs-worker', `127.0.0.1:${ports.own}`),
        job('wrs-worker-sdk', `127.0.0.1:${ports.sdk}`),
      ],
    });
    await waitFor(
      async () =>
        (await queryPrometheus(prometheus!.url, 'up == 1')).length === 3 ? true : undefined,
      { timeoutMs: 60_000, what: 'Prometheus to scrape the API and both worker ports' },
    );
  });

  it('every name is exported after a run that calls a provider', async () => {
    const run = await runToEnd(ctx.svc.url, ctx.key, llmWorkflow('metrics-live'), {
      topic: 'metrics',
    }).catch((err: Error) => {
      throw new Error(`${err.message}\nworker stderr:\n${worker.stderr()}`);
    });
    assert.equal(run.status, 'completed');

    const scrape = (url: string) => fetch(url).then((r) => r.text());
    const families = (text: string) => [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
    // The worker counts the run's end after its last activity; the SDK exports on its own schedule.
    const own = await waitFor(
      async () => {
        const text = await scrape(`http://127.0.0.1:${ports.own}/metrics`);
        return /^wrs_provider_requests_total\{provider="openai",outcome="ok"\} 1$/m.test(text) &&
          /^wrs_run_duration_seconds_count\{status="completed"\} 1$/m.test(text)
          ? text
          : undefined;
      },
      { what: 'the run and its provider call on WORKER_METRICS_PORT' },
    ); // prettier-ignore
    const sdk = await waitFor(
      async () => {
        const text = await scrape(`http://127.0.0.1:${ports.sdk}/metrics`).catch(() => '');
        // The local finalize's histogram is counted a moment after the record it wrote is read.
        return SDK_HISTOGRAMS.every((h) => new RegExp(`^${h}_bucket`, 'm').test(text))
          ? text
          : undefined;
      },
      { timeoutMs: 30_000, what: 'temporal_* metrics on WORKER_SDK_METRICS_PORT' },
    );
    const api = await scrape(`${ctx.svc.url}/metrics`);
    // Samples of the API's own families, by route template (never a raw id) and code. The API's registry is
    // this test process's, shared with the other test files of a run: counts are at least this test's.
    assert.match(
      api,
      /^wrs_http_requests_total\{method="POST",route="\/api\/v1\/responses",code="202"\} [1-9]\d*$/m,
    );
    assert.match(api, /^wrs_http_requests_total\{method="GET",route="\/api\/v1\/runs\/:runId"/m);
    assert.doesNotMatch(api, /route="[^"]*run_[0-9A-Z]{26}/);
    assert.match(api, /^wrs_task_queue_backlog\{task_queue="[^"]+",task_type="workflow"\} \d+$/m);
    // The block (D35) and webhook (D20) queues too, whose waiting tasks hold no worker slot.
    for (const queue of ['blocks', 'webhooks'])
      assert.match(
        api,
        new RegExp(
          `^wrs_task_queue_backlog\\{task_queue="[^"]+-${queue}",task_type="activity"\\} \\d+$`,
          'm',
        ),
      );
    assert.match(api, /^wrs_runs_open_past_timeout 0$/m);
    assert.match(api, /^wrs_dependency_up\{dependency="temporal"\} 1$/m);

    const exported = new Set([...families(api), ...families(own), ...families(sdk)]);
    const rules = readYaml<{ groups: { rules: { alert: string; expr: string }[] }[] }>(
      path.join(REPO, 'deploy/prometheus/alerts.yml'),
    ).groups.flatMap((g) => g.rules);
    const missing: string[] = [];
    for (const [where, expr] of [
      ...dashboard().panels.flatMap((p) => p.targets.map((t) => [`panel "${p.title}"`, t.expr])),
      ...rules.map((r) => [`alert ${r.alert}`, r.expr]),
    ]) {
      for (const name of metricNames(expr))
        if (!exported.has(name) && !EXTERNAL.has(name)) missing.push(`${where}: ${name}`);
    }
    assert.deepEqual(missing, [], `exported: ${[...exported].sort().join(' ')}`);
  });

  it("every dashboard panel's expression has data in a real Prometheus scraping them", async () => {
    // The first run created the labelled series (a series is born at its first count); once Prometheus holds
    // them, a second run moves them between two scrapes, as traffic does, so rates are above 0 and quantiles
    // are numbers.
    const held = (promql: string) => async () =>
      (await queryPrometheus(prometheus!.url, promql)).length ? true : undefined;
    await waitFor(held('wrs_run_duration_seconds_count{job="wrs-worker"} > 0'), {
      timeoutMs: 60_000,
      what: "the first run's end in Prometheus",
    });
    await waitFor(held('wrs_provider_requests_total{job="wrs-worker"} > 0'), {
      timeoutMs: 60_000,
      what: "the first run's provider call in Prometheus",
    });
    // The SDK's port and the API are targets of their own, scraped on their own beats: their series too
    // must be held before the second run, or that run may be counted in a series' first sample (a rate of 0).
    for (const series of [...SDK_HISTOGRAMS.map((h) => `${h}_count`), ...API_COUNTERS])
      await waitFor(held(`${series} > 0`), {
        timeoutMs: 60_000,
        what: `the first run's ${series} in Prometheus`,
      });
    const run = await runToEnd(ctx.svc.url, ctx.key, llmWorkflow('metrics-live-2'), {
      topic: 'again',
    });
    assert.equal(run.status, 'completed');
    await waitFor(held('sum(rate(wrs_run_duration_seconds_count[5m])) > 0'), {
      timeoutMs: 60_000,
      what: "the second run's end in Prometheus",
    });
    await waitFor(held('sum(rate(wrs_provider_requests_total[5m])) > 0'), {
      timeoutMs: 60_000,
      what: "the second run's provider call in Prometheus",
    });
    for (const series of [...SDK_HISTOGRAMS.map((h) => `${h}_count`), ...API_COUNTERS])
      await waitFor(held(`sum(rate(${series}[5m])) > 0`), {
        timeoutMs: 60_000,
        what: `the second run's ${series} in Prometheus`,
      });
    const empty: string[] = [];
    for (const panel of dashboard().panels)
      for (const [i, target] of panel.targets.entries()) {
        const result = await queryPrometheus(prometheus!.url, target.expr);
        const hasData = result.some((r) => r.value[1] !== 'NaN');
        if (!hasData && !EMPTY_HERE.has(`${panel.title}#${i}`))
          empty.push(`${panel.title}#${i}: ${target.expr}`);
      }
    assert.deepEqual(empty, []);
  });
});
