// The Helm install documented in docs/deploy.md ("Install on Kubernetes") works as written: the test takes the
// `kubectl create secret` and `helm install` commands from the docs, renders exactly that install, and starts the
// service's configuration (config/index.ts loadConfig, NODE_ENV=production) from what a pod would receive: the
// ConfigMap and the documented secret's keys as mounted files. A secret production requires that the docs leave
// out (as PAYLOAD_KEYS once was) makes loadConfig throw here, as it made the pods crash-loop.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../config';
import {
  CHART_DIR,
  REPO,
  RENDER_KUBE_VERSION,
  deployTools,
  parseManifests,
  readYaml,
  runTool,
  type Manifest,
} from '../support/deploy';

/** The shell block of the docs holding `helm install`, its continuation lines joined. */
function documentedCommands(): { secretLiterals: Map<string, string>; helmArgs: string[] } {
  const docs = fs.readFileSync(path.join(REPO, 'docs/deploy.md'), 'utf8');
  const block = [...docs.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1])
    .find((b) => b.includes('helm install wrs deploy/helm'));
  assert.ok(block, 'docs/deploy.md has the helm install block');
  const lines = block.replace(/\\\n\s*/g, ' ').split('\n');
  const kubectl = lines.find((l) => l.startsWith('kubectl create secret generic'));
  const helm = lines.find((l) => l.startsWith('helm install '));
  assert.ok(kubectl && helm, block);
  const secretLiterals = new Map(
    shellWords(kubectl)
      .filter((w) => w.startsWith('--from-literal='))
      .map((w) => {
        const [key, ...rest] = w.slice('--from-literal='.length).split('=');
        return [key, rest.join('=')] as const;
      }),
  );
  return { secretLiterals, helmArgs: shellWords(helm).slice(2) };
}

/**
 * Splits a command line as sh does for the forms the docs use: single quotes, double quotes, and
 * `$(openssl rand -hex N)` / `$(openssl rand -base64 N)`, which are replaced by random values of that form.
 */
function shellWords(line: string): string[] {
  const substituted = line.replace(
    /\$\(openssl rand -(hex|base64) (\d+)\)/g,
    (_, enc: 'hex' | 'base64', n: string) => randomBytes(Number(n)).toString(enc),
  );
  const words: string[] = [];
  for (const m of substituted.matchAll(/(?:'[^']*'|"[^"]*"|[^\s'"]+)+/g))
    words.push(m[0].replace(/'([^']*)'|"([^"]*)"/g, (_, a?: string, b?: string) => a ?? b ?? ''));
  return words;
}

/** A valid value of each variable the chart treats as a secret, for the check of what production requires. */
const SAMPLE_SECRETS: Record<string, string> = {
  MONGODB_URI: 'mongodb://wrs:pw@mongo-0.mongo/wrs?replicaSet=rs0',
  FILE_URL_SECRET: 'f'.repeat(64),
  PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`,
  CODEC_TOKEN: 'c'.repeat(48),
  OPENAI_API_KEY: 'sk-test',
  PROVIDERS: '{}',
  TEMPORAL_API_KEY: 'tk',
};

/** The secrets without which loadConfig refuses to start in production, found by leaving each one out in turn. */
function secretsProductionRequires(): string[] {
  const chartSecrets = Object.keys(
    readYaml<{ secrets: { values: Record<string, unknown> } }>(path.join(CHART_DIR, 'values.yaml'))
      .secrets.values,
  );
  assert.deepEqual(chartSecrets.sort(), Object.keys(SAMPLE_SECRETS).sort());
  const env = { NODE_ENV: 'production', ...SAMPLE_SECRETS };
  loadConfig(env); // all of them: valid
  return chartSecrets.filter((name) => {
    try {
      loadConfig({ ...env, [name]: undefined });
      return false;
    } catch {
      return true;
    }
  });
}

type Container = {
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string } }[];
};
const containerOf = (m: Manifest) =>
  (m.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0];

describe('the Helm install of docs/deploy.md', function () {
  let helm: string;
  let docs: ReturnType<typeof documentedCommands>;
  const required = secretsProductionRequires();

  before(async function () {
    this.timeout(30 * 60_000); // builds helm when tools/stack/install.ts has not yet
    ({ helm } = await deployTools());
    docs = documentedCommands();
  });

  const render = async (args: string[]) => {
    const result = await runTool(helm, [
      'template',
      ...args,
      '--kube-version',
      RENDER_KUBE_VERSION,
    ]);
    if (result.code !== 0) throw new Error(result.stderr);
    return parseManifests(result.stdout);
  };

  it('production requires the file link secret and the payload keys (derived from config/index.ts)', () => {
    assert.deepEqual(required.sort(), ['FILE_URL_SECRET', 'PAYLOAD_KEYS']);
  });

  it('the documented secret holds every secret production requires, and secrets.keys lists exactly its keys', () => {
    const keys = [...docs.secretLiterals.keys()];
    for (const name of [...required, 'MONGODB_URI'])
      assert.ok(keys.includes(name), `the documented secret lacks ${name}`);
    const listed = docs.helmArgs
      .find((a) => a.startsWith('secrets.keys='))
      ?.replace(/^secrets\.keys=\{(.*)\}$/, '$1')
      .split(',');
    assert.deepEqual(listed?.sort(), keys.sort());
  });

  it('renders, and every pod of it loads a production configuration from the ConfigMap and the secret files', async function () {
    this.timeout(60_000);
    const manifests = await render(docs.helmArgs);
    const configMap = manifests.find((m) => m.kind === 'ConfigMap') as Manifest & {
      data: Record<string, string>;
    };
    assert.equal(configMap.data.NODE_ENV, 'production');
    assert.equal(
      manifests.find((m) => m.kind === 'Secret'),
      undefined,
      'the existing Secret is used',
    );
    // The documented secret, as the files Kubernetes mounts at /etc/wrs/secrets.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-secret-'));
    for (const [key, value] of docs.secretLiterals) fs.writeFileSync(path.join(dir, key), value);
    const deployments = manifests.filter((m) => m.kind === 'Deployment');
    assert.equal(deployments.length, 2);
    for (const deployment of deployments) {
      const container = containerOf(deployment);
      const env: Record<string, string> = { ...configMap.data };
      for (const e of container.env ?? [])
        env[e.name] = (e.value ?? '').replace(/^\/etc\/wrs\/secrets\//, `${dir}/`);
      for (const e of container.env ?? [])
        if (e.name.endsWith('_FILE') && e.value?.startsWith('/etc/wrs/secrets/'))
          assert.ok(fs.existsSync(env[e.name]), `${deployment.metadata.name}: ${e.name}`);
      const config = loadConfig(env);
      assert.equal(config.codec.keys.length, 1, deployment.metadata.name);
      // The documented provider key is used (not dropped for want of OPENAI_BASE_URL), and priced.
      assert.deepEqual(config.warnings, [], deployment.metadata.name);
      assert.equal(config.providers.openai?.api_key, docs.secretLiterals.get('OPENAI_API_KEY'));
      assert.ok(Object.keys(config.prices).length > 0, 'the documented install prices its models');
      assert.match(env.NODE_OPTIONS ?? '', /^--max-old-space-size=\d+$/);
    }
  });

  it('refuses an existing secret whose keys leave out what production requires', async function () {
    this.timeout(60_000);
    const withoutPayloadKeys = docs.helmArgs.map((a) =>
      a.startsWith('secrets.keys=') ? 'secrets.keys={MONGODB_URI,FILE_URL_SECRET}' : a,
    );
    await assert.rejects(render(withoutPayloadKeys), /secrets\.keys must list PAYLOAD_KEYS/);
  });
});
