/**
 * `npm start`: the whole service on one machine. Starts Temporal and FerretDB (unless
 * TEMPORAL_ADDRESS / MONGODB_URI point at servers of your own), the worker as a child process
 * (restarted if it dies) and the API in this process, makes sure a demo account, key and workflow
 * exist, and prints how to call it. Ports and the data directory come from the environment
 * (config/dev-stack.ts), so two clones can run side by side. Data lives in DATA_DIR (.data) so runs
 * survive a stop and start. Ctrl-C stops everything; servers left behind by a crashed `npm start`
 * (of any clone) are stopped by the next one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../config';
import { devPorts, loadDevStackConfig, type DevPort } from '../../config/dev-stack';
import { createLogger } from '../../api/logger';
import { installLastResort } from '../../api/last-resort';
import { startApi } from '../../api/start-api';
import {
  ensureFerretDb,
  ensureTemporal,
  isPortFree,
  privateDir,
  reapOrphans,
  registerChild,
  startFerretDb,
  startTemporal,
} from '../stack';
import { connectStore } from '../../store/db';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/definitions';
import { ensureDemo } from './demo';

const ROOT = path.resolve(__dirname, '..', '..');
const WORKER_MAIN = path.join(ROOT, 'worker', 'main.ts');

const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const dev = loadDevStackConfig(process.env, ROOT);
  const env = { ...process.env };
  const stops: Array<() => Promise<unknown>> = [];
  // DATA_DIR holds the codec token, the demo key, the servers' logs and databases (with the
  // development payload key and file URL secret): the operator's only. Files this process and its
  // children (Temporal, FerretDB, the worker) create are 0600, directories 0700.
  process.umask(0o077);
  privateDir(dev.dataDir);

  const orphans = reapOrphans();
  for (const orphan of orphans)
    log(`stopped ${orphan.command} (pid ${orphan.pid}), left running by a crashed start`);
  await refuseBusyPorts(devPorts(dev), orphans.length > 0 ? 10_000 : 0);

  // D32: the embedded UI decodes payloads through the API's codec server; its token lives in
  // DATA_DIR and reaches the UI only through the operator's browser (printWelcome), never the
  // Temporal command line or the UI's public settings.
  env.CODEC_TOKEN ??= localCodecToken(path.join(dev.dataDir, 'codec-token'));
  if (dev.temporal)
    env.CODEC_CORS_ORIGINS ??= `http://127.0.0.1:${dev.temporal.ui.port},http://localhost:${dev.temporal.ui.port}`;

  let temporalUi: string | null = null;
  if (dev.temporal) {
    log(`starting Temporal dev server on port ${dev.temporal.server.port} ...`);
    const temporal = await startTemporal({
      dataDir: path.join(dev.dataDir, 'temporal'),
      port: dev.temporal.server.port,
      uiPort: dev.temporal.ui.port,
      searchAttributes: SEARCH_ATTRIBUTE_TYPES,
      binary: await ensureTemporal({ log }),
    });
    stops.push(() => temporal.stop());
    env.TEMPORAL_ADDRESS = temporal.address;
    temporalUi = temporal.uiUrl;
  }
  if (dev.mongo) {
    log(`starting FerretDB on port ${dev.mongo.port} ...`);
    const mongo = await startFerretDb({
      dataDir: path.join(dev.dataDir, 'ferretdb'),
      port: dev.mongo.port,
      binary: await ensureFerretDb({ log }),
    });
    stops.push(() => mongo.stop());
    env.MONGODB_URI = mongo.uri;
  }
  env.LOG_LEVEL ??= 'warn';
  const config = loadConfig(env);

  const store = await connectStore({
    uri: config.mongo.uri,
    dbName: config.mongo.dbName,
    appName: 'wrs-start',
  });
  stops.unshift(() => store.close());
  // The worker serves no codec endpoint: it does not get the token (D32).
  const worker = superviseWorker({ ...env, CODEC_TOKEN: undefined });
  stops.unshift(() => worker.stop());
  const apiLogger = createLogger(config.logLevel, 'wrs-api');
  const api = await startApi(config, apiLogger);
  // As in the API's own entry (api/main.ts): no request can take this process down (D40).
  installLastResort(apiLogger);
  stops.unshift(() => api.close());

  const demo = await ensureDemo(store.collections, path.join(dev.dataDir, 'demo.json'));
  printWelcome(api.url, temporalUi, demo.key, demo.slug, dev.dataDir);

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

/**
 * Stops start-up at once, naming the variable to set, when a port this start needs is taken. Right
 * after stopping orphans, a port may take a moment to be let go of: `graceMs` allows for that.
 */
async function refuseBusyPorts(ports: DevPort[], graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  for (const p of ports) {
    while (!(await isPortFree(p.port)) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    if (await isPortFree(p.port)) continue;
    const taken = new Set(ports.map((q) => q.port));
    let suggestion = p.port + 10;
    while (taken.has(suggestion)) suggestion += 10;
    throw new Error(
      `port ${p.port} (${p.name}) is already in use, by another \`npm start\` or another program.\n` +
        `Set ${p.variable} to a free port, e.g. \`${p.variable}=${suggestion} npm start\` ` +
        '(a second clone needs API_PORT, TEMPORAL_PORT, TEMPORAL_UI_PORT and MONGO_PORT of its own).',
    );
  }
}

/**
 * Runs the worker (worker/main.ts) as a child process, apart from the API, and starts it again
 * whenever it dies, waiting longer (up to 30 s) while it keeps dying within seconds of starting.
 * The child has an IPC channel to us, so it exits by itself if this process is killed, and it is
 * registered (tools/stack/registry.ts) so the next start kills it if it does not.
 */
function superviseWorker(env: NodeJS.ProcessEnv): { stop(): Promise<void> } {
  let child: ChildProcess | null = null;
  let stopping = false;
  let failures = 0;
  let restartTimer: NodeJS.Timeout | undefined;

  const launch = () => {
    const startedAt = Date.now();
    const proc = spawn(process.execPath, ['--require', 'tsx/cjs', WORKER_MAIN], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child = proc;
    const unregister =
      proc.pid === undefined ? () => {} : registerChild(proc.pid, `worker: ${WORKER_MAIN}`);
    log(`worker started (pid ${proc.pid})`);
    proc.once('exit', (code, signal) => {
      unregister();
      child = null;
      if (stopping) return;
      failures = Date.now() - startedAt < 10_000 ? failures + 1 : 0;
      const delayMs = Math.min(30_000, failures === 0 ? 0 : 1_000 * 2 ** (failures - 1));
      log(
        `worker (pid ${proc.pid}) exited (${signal ?? `exit code ${code}`}); restarting it${delayMs ? ` in ${delayMs / 1000} s` : ''}`,
      );
      restartTimer = setTimeout(launch, delayMs);
    });
  };
  launch();

  return {
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      const proc = child;
      if (!proc) return;
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM'); // the worker drains: running node attempts get their grace time
      await exited;
    },
  };
}

/** The local operator's codec token (D32): made once, kept in DATA_DIR so the UI and the CLI keep working across restarts. */
function localCodecToken(file: string): string {
  if (existsSync(file)) {
    chmodSync(file, 0o600); // one an older version wrote may be readable by all
    return readFileSync(file, 'utf8').trim();
  }
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

function printWelcome(
  apiUrl: string,
  uiUrl: string | null,
  key: string,
  slug: string,
  dataDir: string,
): void {
  const body = JSON.stringify({ workflowId: slug, inputs: { name: 'Ada' } });
  process.stdout.write(
    [
      '',
      'Workflow Run Service is running.',
      `  API          ${apiUrl}`,
      `  Playground   ${apiUrl}/  (paste the demo key)`,
      `  Temporal UI  ${uiUrl ?? '(your own Temporal server)'}`,
      `  Codec server ${apiUrl}/codec (payloads are encrypted; token in ${path.join(dataDir, 'codec-token')})`,
      ...(uiUrl
        ? [
            '               To see payloads decoded in the Temporal UI, set its "Codec Server browser endpoint"',
            `               (once per browser) to ${apiUrl}/codec/<that token>.`,
          ]
        : []),
      `  Demo API key ${key}`,
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

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
