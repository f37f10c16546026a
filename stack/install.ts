// Builds (if missing) and prints the Temporal CLI and FerretDB binaries, and installs schemathesis (a Python
// tool the reliability tests run) and the Python client's test venv into the same cache: `tsx stack/install.ts`.
// Also helm, kubeconform and the Kubernetes and Compose schemas the deployment tests use (test/deploy).
import { defaultCacheDir, ensureComposeCheck, ensureFerretDb, ensureHelm, ensureKubeconform, ensureTemporal } from './binaries';
import { ensureComposeSpecSchema, ensureKubernetesSchemas } from './deploy-schemas';
import { ensurePythonClientEnv, ensureSchemathesis } from './python-tools';

async function main(): Promise<void> {
  const log = (line: string): void => {
    if (line.trim()) process.stderr.write(`${line}\n`);
  };
  const cacheDir = defaultCacheDir();
  // Sequential: two parallel Go builds mostly fight over CPU and make the output unreadable.
  const temporal = await ensureTemporal({ cacheDir, log });
  const ferretdb = await ensureFerretDb({ cacheDir, log });
  const schemathesis = await ensureSchemathesis({ cacheDir, log });
  const pythonClient = await ensurePythonClientEnv({ cacheDir, log });
  // Issue 20: what test/deploy checks the Compose file and the Helm chart with.
  const helm = await ensureHelm({ cacheDir, log });
  const kubeconform = await ensureKubeconform({ cacheDir, log });
  const kubernetesSchemas = await ensureKubernetesSchemas({ cacheDir, log });
  const composeSpec = await ensureComposeSpecSchema({ cacheDir, log });
  const composeCheck = await ensureComposeCheck({ cacheDir, log });
  process.stdout.write(`temporal ${temporal}\nferretdb ${ferretdb}\nschemathesis ${[schemathesis.command, ...schemathesis.args].join(' ')}\npython-client ${pythonClient}\n`);
  process.stdout.write(`helm ${helm}\nkubeconform ${kubeconform}\nkubernetes-schemas ${kubernetesSchemas}\ncompose-spec ${composeSpec}\ncompose-check ${composeCheck}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
