// `npm test` / `npm start` run this first (pretest / prestart): builds what is missing from the
// binary cache (~/.cache/wrs) before anything else starts, so no test timeout or start-up wait
// ever includes a build. Each build prints one line when it starts, then its elapsed time every
// 15 s, so a long Go build on a fresh machine is never mistaken for a hang. Build output goes to
// ~/.cache/wrs/build.log (a failure prints its tail).
//   tsx tools/stack/install.ts            Temporal CLI, FerretDB and the test tools: schemathesis, the Python
//                                   client's venv, helm, kubeconform, the compose-go checker and schemas
//   tsx tools/stack/install.ts --servers  Temporal CLI and FerretDB only (what `npm start` needs)
import fs from 'node:fs';
import path from 'node:path';
import {
  ALERTMANAGER_VERSION,
  FERRETDB_VERSION,
  HELM_VERSION,
  KUBECONFORM_VERSION,
  PROMTOOL_VERSION,
  TEMPORAL_CLI_VERSION,
  alertmanagerBinaryPath,
  amtoolBinaryPath,
  composeCheckBinaryPath,
  defaultCacheDir,
  ensureAlertmanager,
  ensureAmtool,
  ensureComposeCheck,
  ensureFerretDb,
  ensureHelm,
  ensureKubeconform,
  ensurePrometheus,
  ensurePromtool,
  ensureTemporal,
  ensureTemporalServer,
  ensureTemporalSqlTool,
  temporalServerBinaryPath,
  temporalSqlToolBinaryPath,
  TEMPORAL_SERVER_VERSION,
  ferretDbBinaryPath,
  helmBinaryPath,
  kubeconformBinaryPath,
  prometheusBinaryPath,
  promtoolBinaryPath,
  temporalBinaryPath,
} from './binaries';
import {
  COMPOSE_GO_VERSION,
  KUBERNETES_VALIDATE_VERSION,
  ensureComposeSpecSchema,
  ensureKubernetesSchemas,
} from './deploy-schemas';
import {
  ensurePythonClientEnv,
  ensureSchemathesis,
  isSchemathesisInstalled,
  schemathesisVersion,
} from './python-tools';

/** Seconds between progress lines of one build. */
const PROGRESS_EVERY_MS = 15_000;

interface Step {
  what: string;
  /** Whether it is built already; absent for steps that find out fast by themselves (announced only when slow). */
  done?: () => boolean;
  run: (log: (line: string) => void) => Promise<unknown>;
}

/** Runs one build step with a progress ticker; silent when the thing is already built. */
async function build(step: Step, buildLog: string): Promise<void> {
  if (step.done?.()) return;
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 1000);
  if (step.done)
    process.stderr.write(`building ${step.what} (first run only; takes minutes on 2 cores) ...\n`);
  const ticker = setInterval(
    () => process.stderr.write(`building ${step.what} … ${seconds()} s\n`),
    PROGRESS_EVERY_MS,
  );
  const out = fs.openSync(buildLog, 'a');
  try {
    await step.run((line) => {
      if (line.trim()) fs.writeSync(out, `${line}\n`);
    });
  } finally {
    clearInterval(ticker);
    fs.closeSync(out);
  }
  if (step.done || seconds() >= 2) process.stderr.write(`built ${step.what} in ${seconds()} s\n`);
}

/** Builds whatever is missing: the two servers, and unless `serversOnly` the test tools too. */
export async function installTools(opts: { serversOnly?: boolean } = {}): Promise<void> {
  const { serversOnly = false } = opts;
  const cacheDir = defaultCacheDir();
  fs.mkdirSync(cacheDir, { recursive: true });
  const buildLog = path.join(cacheDir, 'build.log');
  const steps: Step[] = [
    {
      what: `Temporal CLI ${TEMPORAL_CLI_VERSION}`,
      done: () => fs.existsSync(temporalBinaryPath(cacheDir)),
      run: (log) => ensureTemporal({ cacheDir, log }),
    },
    {
      what: `FerretDB ${FERRETDB_VERSION}`,
      done: () => fs.existsSync(ferretDbBinaryPath(cacheDir)),
      run: (log) => ensureFerretDb({ cacheDir, log }),
    },
  ];
  if (!serversOnly) {
    steps.push({
      what: `schemathesis ${schemathesisVersion()} (Python venv)`,
      done: () => isSchemathesisInstalled(cacheDir),
      run: (log) => ensureSchemathesis({ cacheDir, log }),
    });
    steps.push(
      {
        what: "the Python client's test venv",
        run: (log) => ensurePythonClientEnv({ cacheDir, log }),
      },
      // What test/deploy checks the Compose file and the Helm chart with.
      {
        what: `helm ${HELM_VERSION}`,
        done: () => fs.existsSync(helmBinaryPath(cacheDir)),
        run: (log) => ensureHelm({ cacheDir, log }),
      },
      {
        what: `kubeconform ${KUBECONFORM_VERSION}`,
        done: () => fs.existsSync(kubeconformBinaryPath(cacheDir)),
        run: (log) => ensureKubeconform({ cacheDir, log }),
      },
      {
        what: `Kubernetes JSON schemas (kubernetes-validate ${KUBERNETES_VALIDATE_VERSION})`,
        run: (log) => ensureKubernetesSchemas({ cacheDir, log }),
      },
      {
        what: `the Compose Specification schema (compose-go ${COMPOSE_GO_VERSION})`,
        run: (log) => ensureComposeSpecSchema({ cacheDir, log }),
      },
      // What test/deploy checks and unit-tests the Prometheus alert rules with (`promtool test rules`).
      {
        what: `promtool ${PROMTOOL_VERSION}`,
        done: () => fs.existsSync(promtoolBinaryPath(cacheDir)),
        run: (log) => ensurePromtool({ cacheDir, log }),
      },
      // The end-to-end alert check (test/deploy/alert-e2e.test.ts): a real Prometheus and Alertmanager.
      {
        what: `Prometheus ${PROMTOOL_VERSION}`,
        done: () => fs.existsSync(prometheusBinaryPath(cacheDir)),
        run: (log) => ensurePrometheus({ cacheDir, log }),
      },
      {
        what: `Alertmanager ${ALERTMANAGER_VERSION}`,
        done: () => fs.existsSync(alertmanagerBinaryPath(cacheDir)),
        run: (log) => ensureAlertmanager({ cacheDir, log }),
      },
      {
        what: `amtool ${ALERTMANAGER_VERSION}`,
        done: () => fs.existsSync(amtoolBinaryPath(cacheDir)),
        run: (log) => ensureAmtool({ cacheDir, log }),
      },
      // The production Temporal of docker-compose.yml (test/deploy/temporal-postgres.test.ts, rolling-upgrade.test.ts).
      {
        what: `temporal-sql-tool ${TEMPORAL_SERVER_VERSION}`,
        done: () => fs.existsSync(temporalSqlToolBinaryPath(cacheDir)),
        run: (log) => ensureTemporalSqlTool({ cacheDir, log }),
      },
      {
        what: `temporal-server ${TEMPORAL_SERVER_VERSION}`,
        done: () => fs.existsSync(temporalServerBinaryPath(cacheDir)),
        run: (log) => ensureTemporalServer({ cacheDir, log }),
      },
      {
        what: 'the compose-go checker',
        done: () => fs.existsSync(composeCheckBinaryPath(cacheDir)),
        run: (log) => ensureComposeCheck({ cacheDir, log }),
      },
    );
  }
  // Sequential: two parallel Go builds mostly fight over CPU and make the output unreadable.
  for (const step of steps) await build(step, buildLog);
}

if (require.main === module) {
  installTools({ serversOnly: process.argv.includes('--servers') }).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
