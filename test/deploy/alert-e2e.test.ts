// End to end, the paging path of docker-compose.yml on this machine: a real Prometheus (built from the module of
// the Compose image's release) scrapes a real API process with the repository's alert rules, and sends to a real
// Alertmanager whose webhook receiver is a local HTTP server. The API is killed (SIGKILL): WrsApiAbsent must
// reach the receiver, firing, through Alertmanager. Its `for: 2m` makes this test take about two and a half
// minutes. Prometheus and Alertmanager run with this test's short intervals; the rules are the shipped ones.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { ensureAlertmanager, ensurePrometheus } from '../../tools/stack/binaries';
import { freePort } from '../../tools/stack/ports';
import { spawnServer, waitForTcp, type ServerProcess } from '../../tools/stack/process';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { waitFor } from '../support/http';
import { useService } from '../support/use-service';
import { REPO } from '../support/deploy';

interface WebhookAlert {
  status: string;
  labels: Record<string, string>;
}

describe('alerts end to end: Prometheus sees the API killed, the alert reaches a webhook through Alertmanager', function () {
  this.timeout(10 * 60_000);
  const ctx = useService({ worker: false, account: false });
  const servers: ServerProcess[] = [];
  let api: ApiProcess | undefined;
  let receiver: http.Server | undefined;
  const received: WebhookAlert[] = [];
  let prometheusUrl = '';

  before(async function () {
    this.timeout(40 * 60_000); // Go builds of Prometheus and Alertmanager when tools/stack/install.ts has not
    const [prometheus, alertmanager] = [await ensurePrometheus(), await ensureAlertmanager()];
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-alert-e2e-'));

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
    fs.writeFileSync(path.join(dir, 'alertmanager.yml'), yaml.dump(am));
    const amPort = await freePort();
    servers.push(
      spawnServer({
        name: 'alertmanager',
        command: alertmanager,
        args: [
          `--config.file=${path.join(dir, 'alertmanager.yml')}`,
          `--storage.path=${path.join(dir, 'am-data')}`,
          `--web.listen-address=127.0.0.1:${amPort}`,
          '--cluster.listen-address=',
        ],
        logFile: path.join(dir, 'alertmanager.log'),
        cwd: dir,
      }),
    );

    // Prometheus: the shipped rules, the API as job wrs-api, scraped and evaluated every second.
    const promPort = await freePort();
    fs.writeFileSync(
      path.join(dir, 'prometheus.yml'),
      yaml.dump({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [path.join(REPO, 'deploy/helm/files/alerts.yml')],
        alerting: {
          alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${amPort}`] }] }],
        },
        scrape_configs: [
          {
            job_name: 'wrs-api',
            static_configs: [{ targets: [new URL(api.url).host] }],
          },
        ],
      }),
    );
    servers.push(
      spawnServer({
        name: 'prometheus',
        command: prometheus,
        args: [
          `--config.file=${path.join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${path.join(dir, 'prom-data')}`,
          `--web.listen-address=127.0.0.1:${promPort}`,
        ],
        logFile: path.join(dir, 'prometheus.log'),
        cwd: dir,
      }),
    );
    await waitForTcp('127.0.0.1', amPort, 30_000);
    await waitForTcp('127.0.0.1', promPort, 30_000);
    prometheusUrl = `http://127.0.0.1:${promPort}`;
  });

  after(async () => {
    await api?.kill();
    for (const s of servers) await s.kill();
    receiver?.close();
  });

  const query = async (promql: string) => {
    const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
    return ((await res.json()) as { data: { result: { value: [number, string] }[] } }).data.result;
  };

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
      { timeoutMs: 4 * 60_000, intervalMs: 500, what: 'WrsApiAbsent at the webhook receiver' },
    );
    assert.equal(alert.labels.severity, 'critical');
    const seconds = (Date.now() - killedAt) / 1000;
    // The rule's `for: 2m` holds it back; then scrape, evaluation and Alertmanager's group wait.
    assert.ok(seconds >= 120, `fired after ${seconds} s`);
    console.log(`      WrsApiAbsent reached the receiver ${seconds.toFixed(1)} s after the kill`);
  });
});
