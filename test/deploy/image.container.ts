/**
 * The image runs (`npm run test:image`, run by .ci/run before `npm test`: tools/scripts/test-image.sh
 * starts Docker, builds the image, then runs this file, which `npm test` leaves out: not *.test.ts).
 * The Dockerfile's image (WRS_IMAGE, default
 * `wrs:local`, built with `deploy/docker/make-base-image.sh`'s local base) runs as Compose runs it:
 * an API and a worker container, non-root, read-only root filesystem, no capabilities, healthchecks,
 * NODE_ENV=production, on a user-defined bridge network this test creates. They reach only each
 * other and, through forwarders on the bridge's gateway address, the production Temporal, FerretDB
 * and the fake provider on 127.0.0.1; the API is published on 127.0.0.1 only. A smoke run (start,
 * stream, GET, cancel) passes through the API container, and a worker stopped by `docker stop` (SIGTERM)
 * in the middle of a provider call lets it finish and exits 0; the run completes, billed once.
 *
 * Needs Docker's daemon (DOCKER_HOST, default unix:///run/wrs-docker.sock; the script starts
 * `dockerd --storage-driver=vfs` there as root when nothing answers).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { promisify } from 'node:util';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';
import { newAccount } from '../support/accounts';
import { llmWorkflow, publish, waitForRun } from '../support/fixtures';
import { call, waitFor } from '../support/http';
import { startRun } from '../support/runs';
import { startService, type TestService } from '../support/service';
import { openSse } from '../support/sse';
import { deriveId } from '../../store/ids';
import { useProductionStack } from './support/production-stack';

const run = promisify(execFile);
const DOCKER_HOST = process.env.DOCKER_HOST ?? 'unix:///run/wrs-docker.sock';
const IMAGE = process.env.WRS_IMAGE ?? 'wrs:local';
const docker = async (...args: string[]) =>
  (
    await run('docker', args, { env: { ...process.env, DOCKER_HOST }, maxBuffer: 1 << 24 })
  ).stdout.trim();

/** A TCP forwarder on `host` (the bridge's gateway) to 127.0.0.1:`port`: how containers reach the test stack. */
async function forward(host: string, port: number): Promise<{ port: number; close(): void }> {
  const server = net.createServer((socket) => {
    const upstream = net.connect(port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

describe(`the image (${IMAGE}) runs as Compose runs it`, function () {
  this.timeout(300_000);
  const prod = useProductionStack();
  const suffix = `${process.pid}`;
  const network = `wrs-test-${suffix}`;
  const containers: string[] = [];
  const forwarders: Array<{ close(): void }> = [];
  let fake: FakeOpenAI;
  let svc: TestService;
  let apiUrl: string;
  let key: string;
  let containerEnv: string[];

  const health = (name: string) => docker('inspect', '-f', '{{.State.Health.Status}}', name);
  const startContainer = async (name: string, args: string[], command: string[]) => {
    containers.push(name);
    await docker(
      'run',
      '-d',
      '--name',
      name,
      '--network',
      network,
      '--read-only',
      '--tmpfs',
      '/tmp:size=256m',
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges:true',
      ...containerEnv,
      ...args,
      IMAGE,
      ...command,
    );
    await waitFor(async () => ((await health(name)) === 'healthy' ? true : undefined), {
      timeoutMs: 120_000,
      intervalMs: 500,
      what: `${name} healthy`,
    });
  };
  const healthcheck = (port: number) => [
    '--health-cmd',
    `node -e "fetch('http://127.0.0.1:${port}/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"`,
    '--health-interval',
    '1s',
    '--health-retries',
    '3',
  ];

  before(async () => {
    await docker('image', 'inspect', IMAGE);
    fake = await startFakeOpenAI();
    const prices = JSON.stringify({ 'gpt-test': { input_per_mtok: 1, output_per_mtok: 2 } });
    const secrets = {
      PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      FILE_URL_SECRET: randomBytes(32).toString('hex'),
    };
    // The test's own process only creates the account (store) and reads results.
    svc = await startService({
      stack: prod.stack,
      worker: false,
      env: { ...secrets, PRICES: prices },
    });
    ({ key } = await newAccount(svc.store.collections, 10));

    await docker('network', 'create', '--driver', 'bridge', network);
    const gateway = await docker(
      'network',
      'inspect',
      '-f',
      '{{(index .IPAM.Config 0).Gateway}}',
      network,
    );
    const [temporalPort, mongoPort] = [
      Number(prod.temporal.address.split(':')[1]),
      Number(new URL(prod.stack.mongoUri).port),
    ];
    const t = await forward(gateway, temporalPort);
    const m = await forward(gateway, mongoPort);
    const p = await forward(gateway, Number(new URL(fake.baseUrl).port));
    forwarders.push(t, m, p);
    containerEnv = Object.entries({
      ...secrets,
      TEMPORAL_ADDRESS: `${gateway}:${t.port}`,
      TEMPORAL_NAMESPACE: svc.config.temporal.namespace,
      TEMPORAL_TASK_QUEUE: svc.config.temporal.taskQueue,
      MONGODB_URI: `mongodb://${gateway}:${m.port}/`,
      MONGODB_DB: svc.config.mongo.dbName,
      OPENAI_BASE_URL: `http://${gateway}:${p.port}${new URL(fake.baseUrl).pathname}`,
      PRICES: prices,
      WORKER_METRICS_PORT: '9100',
      WORKER_SHUTDOWN_GRACE_MS: '20000',
      LOG_LEVEL: 'warn',
    }).flatMap(([k, v]) => ['-e', `${k}=${v}`]);

    await startContainer(`wrs-worker-a-${suffix}`, healthcheck(9100), [
      'node',
      'dist/worker/main.js',
    ]);
    await startContainer(
      `wrs-api-${suffix}`,
      ['-p', '127.0.0.1::8080', ...healthcheck(8080)],
      ['node', 'dist/api/main.js'],
    );
    const published = await docker('port', `wrs-api-${suffix}`, '8080/tcp');
    apiUrl = `http://${published.split('\n')[0]}`;
    await publish(apiUrl, key, llmWorkflow('smoke'));
  });
  after(async () => {
    for (const name of containers) await docker('rm', '-f', name).catch(() => undefined);
    await docker('network', 'rm', network).catch(() => undefined);
    for (const f of forwarders) f.close();
    await svc?.close();
    await fake?.close();
  });

  it('runs as the unprivileged node user on a read-only root filesystem', async () => {
    const api = `wrs-api-${suffix}`;
    assert.equal(await docker('exec', api, 'id', '-u'), '1000');
    await assert.rejects(docker('exec', api, 'touch', '/app/written'), /Read-only file system/);
    assert.equal(await docker('exec', api, 'sh', '-c', 'touch /tmp/ok && echo ok'), 'ok');
  });

  it('serves the playground page built into the image (no playground sources in it)', async () => {
    const page = await fetch(`${apiUrl}/`);
    assert.equal(page.status, 200);
    const script = /src="(\/playground\/app\.[0-9a-f]{12}\.js)"/.exec(await page.text())?.[1];
    assert.ok(script, 'the page names its hashed script');
    assert.equal((await fetch(`${apiUrl}${script}`)).status, 200);
    await assert.rejects(
      docker('exec', `wrs-api-${suffix}`, 'ls', '/app/playground'),
      /No such file/,
    );
  });

  it('a smoke run through the API container: start with a stream to [DONE], GET, cancel', async () => {
    const stream = await openSse(`${apiUrl}/api/v1/responses`, {
      method: 'POST',
      key,
      body: { workflowId: 'smoke', stream: true, inputs: { topic: 'in a container' } },
    });
    assert.equal(stream.status, 200);
    const created = await stream.until((f) => f.event?.type === 'response.created');
    await stream.closed;
    assert.equal(stream.frames.at(-1)?.data, '[DONE]');
    const read = await call(apiUrl, 'GET', `/api/v1/runs/${created.event.response.run_id}`, {
      key,
    });
    assert.equal(read.body.status, 'completed');
    assert.equal(read.body.output.answer[0].parts[0].text, 'echo: in a container');

    const slow = await startRun(apiUrl, key, 'smoke', { topic: 'slow:60000 cancel-in-container' });
    await waitFor(async () => fake.requestsWith('cancel-in-container').length > 0 || undefined, {
      what: 'the provider call',
    });
    const cancel = await call(apiUrl, 'POST', `/api/v1/runs/${slow}/cancel`, { key });
    assert.ok(cancel.status < 300, JSON.stringify(cancel.body));
    assert.equal((await waitForRun(apiUrl, key, slow)).status, 'cancelled');
  });

  it('docker stop (SIGTERM) drains a worker: the call in flight finishes, exit 0, the run completes once on the next worker', async () => {
    const runId = await startRun(apiUrl, key, 'smoke', { topic: 'slow:4000 drained' });
    await waitFor(async () => fake.requestsWith('drained').length > 0 || undefined, {
      what: 'the provider call',
    });
    await docker('stop', '-t', '30', `wrs-worker-a-${suffix}`);
    assert.equal(
      await docker('inspect', '-f', '{{.State.ExitCode}}', `wrs-worker-a-${suffix}`),
      '0',
    );
    const calls = fake.requestsWith('drained');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].aborted, false, 'the call in flight was not cut');
    await startContainer(`wrs-worker-b-${suffix}`, healthcheck(9100), [
      'node',
      'dist/worker/main.js',
    ]);
    const ended = await waitForRun(apiUrl, key, runId, 60_000);
    assert.equal(ended.status, 'completed');
    assert.equal(fake.requestsWith('drained').length, 1, 'the provider was called once');
    // GET answers `completed` from the workflow's live state as soon as the graph ends; its finalize
    // activity then books the debit and writes the record last: wait for the record, then count.
    const { runs, ledger } = svc.store.collections;
    await waitFor(
      async () => (await runs.findOne({ _id: runId }))?.status === 'completed' || undefined,
      {
        what: `the final record of ${runId}`,
      },
    );
    const debits = await ledger.find({ run_id: runId, kind: 'run' }).toArray();
    assert.equal(debits.length, 1, 'billed once');
    assert.equal(debits[0]._id, deriveId('led', runId));
    assert.equal(debits[0].amount_usd, -ended.total_cost);
  });
});
