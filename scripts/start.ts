/**
 * `npm start`: the whole service on one machine. Starts Temporal and FerretDB (unless
 * TEMPORAL_ADDRESS / MONGODB_URI point at servers of your own), the worker and the API,
 * makes sure a demo account, key and workflow exist, and prints how to call it.
 * Data lives in .data/ so runs survive a stop and start. Ctrl-C stops everything.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../config';
import { createLogger } from '../api/logger';
import { startApi } from '../api/start-api';
import { ensureFerretDb, ensureTemporal, startFerretDb, startTemporal } from '../stack';
import { connectStore } from '../store/db';
import { SEARCH_ATTRIBUTE_TYPES } from '../workflows/definitions';
import { createRunWorker } from '../worker/create-worker';
import { payloadProtection } from '../codec/data-converter';
import { installWorkerRuntime } from '../worker/runtime';
import { ensureDemo } from './demo';

const DATA_DIR = path.resolve(__dirname, '..', '.data');
const PORTS = { temporal: 7233, temporalUi: 8233, mongo: 27027, api: 8080 };

async function main(): Promise<void> {
  const env = { ...process.env };
  const stops: Array<() => Promise<unknown>> = [];
  const log = (line: string) => process.stderr.write(`${line}\n`);
  mkdirSync(DATA_DIR, { recursive: true });

  // D32: the embedded UI decodes payloads through the API's codec server; its token lives in .data.
  env.CODEC_TOKEN ??= localCodecToken(path.join(DATA_DIR, 'codec-token'));
  env.CODEC_CORS_ORIGINS ??= `http://127.0.0.1:${PORTS.temporalUi},http://localhost:${PORTS.temporalUi}`;
  const codecEndpoint = `http://127.0.0.1:${env.API_PORT ?? PORTS.api}/codec`;

  let temporalUi: string | null = null;
  if (!env.TEMPORAL_ADDRESS) {
    log('starting Temporal dev server ...');
    const temporal = await startTemporal({
      dataDir: path.join(DATA_DIR, 'temporal'),
      port: PORTS.temporal,
      uiPort: PORTS.temporalUi,
      searchAttributes: SEARCH_ATTRIBUTE_TYPES,
      // The UI's browser sends no Authorization header to a codec server: the token goes in the URL.
      uiCodecEndpoint: `${codecEndpoint}/${env.CODEC_TOKEN}`,
      binary: await ensureTemporal({ log }),
    });
    stops.push(() => temporal.stop());
    env.TEMPORAL_ADDRESS = temporal.address;
    temporalUi = temporal.uiUrl;
  }
  if (!env.MONGODB_URI) {
    log('starting FerretDB ...');
    const mongo = await startFerretDb({ dataDir: path.join(DATA_DIR, 'ferretdb'), port: PORTS.mongo, binary: await ensureFerretDb({ log }) });
    stops.push(() => mongo.stop());
    env.MONGODB_URI = mongo.uri;
  }
  env.API_PORT ??= String(PORTS.api);
  env.LOG_LEVEL ??= 'warn';
  const config = loadConfig(env);
  installWorkerRuntime(config.logLevel);

  const store = await connectStore({ uri: config.mongo.uri, dbName: config.mongo.dbName, appName: 'wrs-start' });
  stops.unshift(() => store.close());
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const worker = await createRunWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    collections: store.collections,
    db: store.db,
    config,
    payloads: payloadProtection(config, store.db),
  });
  const workerDone = worker.run();
  stops.unshift(async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await workerDone;
    await connection.close();
  });
  const api = await startApi(config, createLogger(config.logLevel, 'wrs-api'));
  stops.unshift(() => api.close());

  const demo = await ensureDemo(store.collections, path.join(DATA_DIR, 'demo.json'));
  printWelcome(api.url, temporalUi, demo.key, demo.slug);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    log('\nstopping ...');
    for (const fn of stops) await fn().catch((err: unknown) => log(String(err)));
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

function printWelcome(apiUrl: string, uiUrl: string | null, key: string, slug: string): void {
  const body = JSON.stringify({ workflowId: slug, inputs: { name: 'Ada' } });
  process.stdout.write(
    [
      '',
      'Workflow Run Service is running.',
      `  API          ${apiUrl}`,
      `  Playground   ${apiUrl}/  (paste the demo key)`,
      `  Temporal UI  ${uiUrl ?? '(your own Temporal server)'}`,
      `  Demo API key ${key}`,
      `  Codec server ${apiUrl}/codec (payloads are encrypted; the UI decodes through it; token in .data/codec-token)`,
      '',
      'Start a run:',
      `  curl -s ${apiUrl}/api/v1/responses -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" -d '${body}'`,
      'Then read it (use the run_id from the answer):',
      `  curl -s ${apiUrl}/api/v1/runs/RUN_ID -H "Authorization: Bearer ${key}"`,
      '',
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
}

/** The local operator's codec token (D32): made once, kept in .data so the UI and the CLI keep working across restarts. */
function localCodecToken(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

