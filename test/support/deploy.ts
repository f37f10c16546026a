/**
 * Helpers of the deployment tests (test/deploy): the repository's Compose file and Helm chart, the tools that
 * check them (helm, kubeconform: built into ~/.cache/wrs by tools/stack/install.ts, or here when missing), and the
 * list of the service's variables.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import yaml from 'js-yaml';
import { EnvSchema } from '../../config';
import { ensureHelm, ensureKubeconform } from '../../tools/stack/binaries';
import {
  ensureKubernetesSchemas,
  kubeconformSchemaLocation,
} from '../../tools/stack/deploy-schemas';

const run = promisify(execFile);
export const REPO = path.resolve(__dirname, '..', '..');
export const COMPOSE_FILE = path.join(REPO, 'docker-compose.yml');
export const CHART_DIR = path.join(REPO, 'deploy', 'helm');
/** Kubernetes version the chart renders for (the newest with schemas; kubeconform also checks the oldest). */
export const RENDER_KUBE_VERSION = '1.37.0';

/** Every variable config/index.ts reads. */
export function envVariables(): string[] {
  return Object.keys(EnvSchema.shape);
}

/** Parses a YAML file as Compose does: with merge keys (`<<: *anchor`), which js-yaml 5 enables only on request. */
export function readYaml<T = unknown>(file: string): T {
  return yaml.load(fs.readFileSync(file, 'utf8'), {
    schema: yaml.CORE_SCHEMA.withTags(yaml.mergeTag),
  }) as T;
}

export interface DeployTools {
  helm: string;
  kubeconform: string;
}

/** The cached tools (a Go build of several minutes on a machine where tools/stack/install.ts has not run yet). */
export async function deployTools(): Promise<DeployTools> {
  const [helm, kubeconform] = [await ensureHelm(), await ensureKubeconform()];
  await ensureKubernetesSchemas();
  return { helm, kubeconform };
}

/** Runs a tool; resolves with its output whatever the exit code, so tests can assert on both. */
export async function runTool(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: REPO,
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? String(err),
    };
  }
}

/** Writes `values` to a temporary file for `helm -f`. */
export function valuesFile(values: unknown): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-helm-'));
  const file = path.join(dir, 'values.yaml');
  fs.writeFileSync(file, yaml.dump(values));
  return file;
}

/** `helm template` of the chart with the given values files; throws with helm's message when it fails. */
export async function renderChart(
  helm: string,
  valueFiles: string[],
  kubeVersion = RENDER_KUBE_VERSION,
): Promise<string> {
  const args = [
    'template',
    'wrs',
    CHART_DIR,
    '--kube-version',
    kubeVersion,
    ...valueFiles.flatMap((f) => ['-f', f]),
  ];
  const result = await runTool(helm, args);
  if (result.code !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  return result.stdout;
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export function parseManifests(text: string): Manifest[] {
  return yaml.loadAll(text).filter((doc): doc is Manifest => Boolean(doc));
}

/** kubeconform -strict of `file` against one Kubernetes version's schemas. */
export function kubeconform(tool: string, file: string, kubeVersion: string) {
  return runTool(tool, [
    '-strict',
    '-summary',
    '-output',
    'json',
    '-kubernetes-version',
    kubeVersion,
    '-schema-location',
    kubeconformSchemaLocation(),
    file,
  ]);
}
