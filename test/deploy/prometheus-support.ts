/**
 * A real Prometheus (and Alertmanager) for the end-to-end monitoring tests of test/deploy: built from the module
 * of the Compose image's release (tools/stack/binaries.ts), run in a temporary directory with the given
 * configuration, and queried through its HTTP API.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { ensureAlertmanager, ensurePrometheus } from '../../tools/stack/binaries';
import { freePort } from '../../tools/stack/ports';
import { spawnServer, waitForTcp, type ServerProcess } from '../../tools/stack/process';
import { waitFor } from '../support/http';

/** Both answer 503 on their APIs until they have started (Prometheus: its TSDB); /-/ready says when. */
async function untilReady(url: string, what: string): Promise<void> {
  await waitFor(
    async () => ((await fetch(`${url}/-/ready`).catch(() => undefined))?.ok ? true : undefined),
    { timeoutMs: 30_000, intervalMs: 100, what },
  );
}

export interface RunningServer {
  url: string;
  port: number;
  server: ServerProcess;
}

/** Starts Prometheus with `config` (the prometheus.yml document) and resolves once it listens. */
export async function startPrometheus(config: unknown): Promise<RunningServer> {
  const binary = await ensurePrometheus();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-prometheus-'));
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), yaml.dump(config));
  const port = await freePort();
  const server = spawnServer({
    name: 'prometheus',
    command: binary,
    args: [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    logFile: path.join(dir, 'prometheus.log'),
    cwd: dir,
  });
  await waitForTcp('127.0.0.1', port, 30_000);
  const url = `http://127.0.0.1:${port}`;
  await untilReady(url, `${server.name} ready (${server.logTail(5)})`);
  return { url, port, server };
}

/** Starts Alertmanager with `config` (the alertmanager.yml document), clustering off. */
export async function startAlertmanager(config: unknown): Promise<RunningServer> {
  const binary = await ensureAlertmanager();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-alertmanager-'));
  fs.writeFileSync(path.join(dir, 'alertmanager.yml'), yaml.dump(config));
  const port = await freePort();
  const server = spawnServer({
    name: 'alertmanager',
    command: binary,
    args: [
      `--config.file=${path.join(dir, 'alertmanager.yml')}`,
      `--storage.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--cluster.listen-address=',
    ],
    logFile: path.join(dir, 'alertmanager.log'),
    cwd: dir,
  });
  await waitForTcp('127.0.0.1', port, 30_000);
  const url = `http://127.0.0.1:${port}`;
  await untilReady(url, `${server.name} ready (${server.logTail(5)})`);
  return { url, port, server };
}

/** An instant query's result vector. */
export async function queryPrometheus(
  url: string,
  promql: string,
): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    data: { result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`);
  return body.data.result;
}
