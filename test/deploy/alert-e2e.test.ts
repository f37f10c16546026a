// End to end, the paging path of docker-compose.yml on this machine: a real Prometheus (built from the module of
// the Compose image's release) scrapes a real API process with the repository's alert rules, and sends to a real
// Alertmanager whose webhook receiver is a local HTTP server. The API is killed (SIGKILL): WrsApiAbsent must
// reach the receiver, firing, through Alertmanager, and not before its `for:` has passed. Prometheus and Alertmanager
// run with this test's short intervals; the rules are the shipped ones (expressions, labels, annotations) except
// that every `for:` is shortened to FOR_SECONDS when the file is loaded: waiting out the shipped `for: 2m` would
// prove nothing more than Prometheus keeping time. What the shipped `for:` means (WrsApiAbsent quiet one minute
// into an outage, firing at five) is proven by promtool's unit tests (deploy/prometheus/alerts.test.yml, run by
// test/deploy/alerts.test.ts).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { waitFor } from '../support/http';
import { useService } from '../support/use-service';
import { REPO } from '../support/deploy';
import {
  queryPrometheus,
  startAlertmanager,
  startPrometheus,
  type RunningServer,
} from './prometheus-support';

/** The `for:` every rule is given here instead of its shipped one. */
const FOR_SECONDS = 8;

interface RuleFile {
  groups: { rules: { alert?: string; expr: string; for?: string }[] }[];
}

/** The shipped rule file with every `for:` shortened, written to a temporary file; its path. */
function rulesWithShortFor(): string {
  const rules = yaml.load(
    fs.readFileSync(path.join(REPO, 'deploy/helm/files/alerts.yml'), 'utf8'),
  ) as RuleFile;
  const absent = rules.groups.flatMap((g) => g.rules).find((r) => r.alert === 'WrsApiAbsent');
  // The rule under test is the shipped one; only its hold time is shortened.
  assert.deepEqual([absent?.expr, absent?.for], ['absent(up{job="wrs-api"} == 1)', '2m']);
  for (const rule of rules.groups.flatMap((g) => g.rules))
    if (rule.for) rule.for = `${FOR_SECONDS}s`;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-alert-rules-')), 'alerts.yml');
  fs.writeFileSync(file, yaml.dump(rules));
  return file;
}

interface WebhookAlert {
  status: string;
  labels: Record<string, string>;
}

describe('alerts end to end: Prometheus sees the API killed, the alert reaches a webhook through Alertmanager', function () {
  this.timeout(4 * 60_000);
  const ctx = useService({ worker: false, account: false });
  const servers: RunningServer[] = [];
  let api: ApiProcess | undefined;
  let receiver: http.Server | undefined;
  const received: WebhookAlert[] = [];
  let prometheusUrl = '';

  before(async function () {
    this.timeout(40 * 60_000); // Go builds of Prometheus and Alertmanager when tools/stack/install.ts has not
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        received.push(...(JSON.parse(body) as { alerts: WebhookAlert[] }).alerts);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const receiverPort = (receiver.address() as { port: number }).port;

    api = await startApiProcess(ctx.svc.config);

    // Alertmanager: the shipped route and receiver shape, pointed at the local receiver, with short waits.
    const am = yaml.load(
      fs.readFileSync(path.join(REPO, 'deploy/alertmanager/alertmanager.yml'), 'utf8'),
    ) as {
      route: Record<string, unknown>;
      receivers: { webhook_configs: Record<string, unknown>[] }[];
    };
    Object.assign(am.route, { group_wait: '1s', group_interval: '1s' });
    am.receivers[0].webhook_configs = [
      { url: `http://127.0.0.1:${receiverPort}/`, send_resolved: true },
    ];
    const alertmanager = await startAlertmanager(am);
    servers.push(alertmanager);

    // Prometheus: the shipped rules (`for:` shortened), the API as job wrs-api, scraped and evaluated every second.
    const prometheus = await startPrometheus({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [rulesWithShortFor()],
      alerting: {
        alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${alertmanager.port}`] }] }],
      },
      scrape_configs: [
        { job_name: 'wrs-api', static_configs: [{ targets: [new URL(api.url).host] }] },
      ],
    });
    servers.push(prometheus);
    prometheusUrl = prometheus.url;
  });

  after(async () => {
    await api?.kill();
    for (const s of servers) await s.server.kill();
    receiver?.close();
  });

  const query = (promql: string) => queryPrometheus(prometheusUrl, promql);

  it('WrsApiAbsent fires at the webhook receiver after the API is killed, and not before', async () => {
    // The API is scraped and up; the rule is quiet.
    await waitFor(
      async () => ((await query('up{job="wrs-api"} == 1')).length === 1 ? true : undefined),
      { timeoutMs: 60_000, what: 'Prometheus to scrape the API' },
    );
    // Before the first scrape `up` was absent, so the rule went pending; with the API up it clears.
    await waitFor(
      async () =>
        (await query('ALERTS{alertname="WrsApiAbsent"}')).length === 0 ? true : undefined,
      { timeoutMs: 30_000, what: 'WrsApiAbsent to be neither pending nor firing' },
    );
    assert.ok(!received.some((a) => a.labels.alertname === 'WrsApiAbsent'));

    const killedAt = Date.now();
    await api!.kill();
    const alert = await waitFor(
      async () =>
        received.find((a) => a.labels.alertname === 'WrsApiAbsent' && a.status === 'firing'),
      { timeoutMs: 2 * 60_000, intervalMs: 100, what: 'WrsApiAbsent at the webhook receiver' },
    );
    assert.equal(alert.labels.severity, 'critical');
    const seconds = (Date.now() - killedAt) / 1000;
    // The rule's `for:` holds it back; then scrape, evaluation and Alertmanager's group wait.
    assert.ok(seconds >= FOR_SECONDS, `fired after ${seconds} s`);
    console.log(`      WrsApiAbsent reached the receiver ${seconds.toFixed(1)} s after the kill`);
  });
});
