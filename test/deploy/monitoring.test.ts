// The monitoring files in deploy/ fit together: Prometheus scrapes the ports the Compose file
// configures, every alert is complete, and every wrs_* metric the alerts and the dashboard query exists in
// lib/metrics/index.ts (the temporal_* SDK names are checked against a live worker in test/worker/production-entry).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { collectProcessMetrics, metricsText } from '../../lib/metrics';
import { COMPOSE_FILE, REPO, readYaml } from '../support/deploy';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: { severity?: string };
  annotations?: { summary?: string };
}

const prometheus = readYaml<{
  rule_files: string[];
  scrape_configs: { job_name: string; dns_sd_configs?: { names: string[]; port: number }[] }[];
}>(path.join(REPO, 'deploy/prometheus/prometheus.yml'));
const rules = readYaml<{ groups: { rules: Rule[] }[] }>(
  path.join(REPO, 'deploy/prometheus/alerts.yml'),
).groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(
  fs.readFileSync(path.join(REPO, 'deploy/grafana/dashboards/wrs.json'), 'utf8'),
) as {
  uid: string;
  panels: { title: string; targets: { expr: string }[] }[];
};

describe('deploy/ monitoring files', () => {
  it('Prometheus scrapes the worker on the ports the Compose file gives it, and loads the alert rules', () => {
    const env = readYaml<{ 'x-wrs-environment': Record<string, unknown> }>(COMPOSE_FILE)[
      'x-wrs-environment'
    ];
    const port = (job: string) =>
      prometheus.scrape_configs.find((c) => c.job_name === job)?.dns_sd_configs?.[0].port;
    assert.equal(port('wrs-worker'), env.WORKER_METRICS_PORT);
    assert.equal(port('wrs-worker-sdk'), env.WORKER_SDK_METRICS_PORT);
    assert.equal(port('wrs-api'), env.API_PORT);
    assert.deepEqual(prometheus.rule_files, ['/etc/prometheus/alerts.yml']);
  });

  it('every alert has an expression, a severity and a summary', () => {
    assert.ok(rules.length >= 5);
    for (const rule of rules) {
      assert.ok(
        rule.alert && rule.expr && rule.labels?.severity && rule.annotations?.summary,
        JSON.stringify(rule),
      );
    }
  });

  it('every wrs_* metric the alerts and the dashboard query is one the service exports', async () => {
    collectProcessMetrics(); // the wrs_process_* and wrs_nodejs_* families the dashboard reads
    const exported = new Set(
      [...(await metricsText()).body.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]),
    );
    // Written by deploy/compose/backup.sh as a textfile metric, not by the service.
    exported.add('wrs_backup_last_success_timestamp_seconds');
    const queries = [
      ...rules.map((r) => r.expr),
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
    ];
    const used = new Set(
      queries.flatMap((q) =>
        [...q.matchAll(/\bwrs_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')),
      ),
    );
    assert.ok(used.size >= 5, [...used].join(', '));
    assert.deepEqual(
      [...used].filter((name) => !exported.has(name)),
      [],
    );
  });

  it('the dashboard has a stable uid and a query in every panel', () => {
    assert.equal(dashboard.uid, 'wrs-overview');
    for (const panel of dashboard.panels)
      assert.ok(panel.targets.length && panel.targets.every((t) => t.expr), panel.title);
  });
});
