// The Helm chart in deploy/helm lints, renders, and every rendered object is valid against the
// Kubernetes JSON schemas (kubeconform -strict) of the oldest and newest Kubernetes the chart supports.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { KUBERNETES_VERSIONS } from '../../tools/stack/deploy-schemas';
import {
  CHART_DIR,
  deployTools,
  kubeconform,
  REPO,
  parseManifests,
  readYaml,
  renderChart,
  runTool,
  valuesFile,
  type DeployTools,
  type Manifest,
} from '../support/deploy';
import { DRAIN_CLOSE_MARGIN_MS } from '../../api/drain';
import { loadConfig } from '../../config';

const CI_VALUES = path.join(CHART_DIR, 'ci-values.yaml');
const MINIMAL = {
  config: { PUBLIC_BASE_URL: 'https://runs.example.com' },
  secrets: {
    values: {
      MONGODB_URI: 'mongodb://mongo:27017/?replicaSet=rs0',
      FILE_URL_SECRET: 'x'.repeat(32),
      PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
    },
  },
};

/** Prometheus Operator kinds: no Kubernetes JSON schema covers them, so they are checked below instead. */
const OPERATOR_KINDS = new Set(['PrometheusRule', 'ServiceMonitor', 'PodMonitor']);

type Container = {
  name: string;
  env?: { name: string; value?: string }[];
  readinessProbe?: { httpGet?: { path: string; port: string } };
  livenessProbe?: { httpGet?: { path: string; port: string } };
  lifecycle?: { preStop?: unknown };
  resources?: { limits?: Record<string, string> };
};
type PodSpec = { containers: Container[]; terminationGracePeriodSeconds?: number };
const podSpec = (m: Manifest) => (m.spec as { template: { spec: PodSpec } }).template.spec;
const find = (all: Manifest[], kind: string, suffix = '') => {
  const found = all.filter((m) => m.kind === kind && m.metadata.name.endsWith(suffix));
  assert.ok(found.length, `no ${kind} named *${suffix} rendered`);
  return found;
};

describe('deploy/helm chart', function () {
  let tools: DeployTools;
  let manifests: Manifest[];
  let renderedFile: string;

  before(async function () {
    this.timeout(30 * 60_000); // builds helm and kubeconform with Go when tools/stack/install.ts has not yet
    tools = await deployTools();
    const text = await renderChart(tools.helm, [CI_VALUES]);
    renderedFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-chart-')), 'rendered.yaml');
    manifests = parseManifests(text);
    const core = manifests.filter((m) => !OPERATOR_KINDS.has(m.kind));
    fs.writeFileSync(renderedFile, core.map((m) => yaml.dump(m)).join('---\n'));
  });

  it('passes helm lint with the CI values and with only the required values', async function () {
    this.timeout(60_000);
    for (const files of [[CI_VALUES], [valuesFile(MINIMAL)]]) {
      const result = await runTool(tools.helm, [
        'lint',
        CHART_DIR,
        '--strict',
        '--kube-version',
        '1.37.0',
        ...files.flatMap((f) => ['-f', f]),
      ]);
      assert.equal(
        result.code,
        0,
        `helm lint ${files.join(' ')}:\n${result.stdout}${result.stderr}`,
      );
    }
  });

  it('refuses to render without the MongoDB URI and the file link secret', async function () {
    this.timeout(60_000);
    await assert.rejects(
      renderChart(tools.helm, [valuesFile({ config: MINIMAL.config })]),
      /secrets\.values\.MONGODB_URI is required/,
    );
  });

  it('sets PUBLIC_BASE_URL (the origin of file and stream links): given, else https://<ingress.host>, else refuses to render', async function () {
    this.timeout(60_000);
    const data = (all: Manifest[]) =>
      (find(all, 'ConfigMap')[0] as Manifest & { data: Record<string, string> }).data;
    const publicBaseUrl = async (values: unknown) =>
      data(parseManifests(await renderChart(tools.helm, [valuesFile(values)]))).PUBLIC_BASE_URL;
    // The CI values: the Ingress on its default host, PUBLIC_BASE_URL not given.
    assert.equal(data(manifests).PUBLIC_BASE_URL, 'https://runs.example.com');
    const { secrets } = MINIMAL;
    const ingress = { enabled: true, host: 'api.acme.test' };
    assert.equal(await publicBaseUrl({ secrets, ingress }), 'https://api.acme.test');
    assert.equal(
      await publicBaseUrl({
        secrets,
        ingress,
        config: { PUBLIC_BASE_URL: 'https://runs.acme.test' },
      }),
      'https://runs.acme.test',
    );
    // No Ingress, no PUBLIC_BASE_URL: the workers would sign every link on http://127.0.0.1:8080.
    await assert.rejects(
      renderChart(tools.helm, [valuesFile({ secrets })]),
      /config\.PUBLIC_BASE_URL is required/,
    );
  });

  for (const version of KUBERNETES_VERSIONS) {
    it(`renders objects that are all valid for Kubernetes ${version} (kubeconform -strict)`, async function () {
      this.timeout(120_000);
      const result = await kubeconform(tools.kubeconform, renderedFile, version);
      const summary = JSON.parse(result.stdout).summary as {
        valid: number;
        invalid: number;
        errors: number;
        skipped: number;
      };
      assert.deepEqual(
        summary,
        {
          valid: manifests.filter((m) => !OPERATOR_KINDS.has(m.kind)).length,
          invalid: 0,
          errors: 0,
          skipped: 0,
        },
        result.stdout + result.stderr,
      );
      assert.equal(result.code, 0);
    });
  }

  it('kubeconform rejects an invalid object (the check can fail)', async function () {
    this.timeout(60_000);
    const api = structuredClone(find(manifests, 'Deployment', '-api')[0]);
    (api.spec as Record<string, unknown>).replicas = 'two';
    const file = path.join(path.dirname(renderedFile), 'broken.yaml');
    fs.writeFileSync(file, JSON.stringify(api));
    const result = await kubeconform(
      tools.kubeconform,
      file,
      KUBERNETES_VERSIONS[KUBERNETES_VERSIONS.length - 1],
    );
    assert.notEqual(result.code, 0);
    assert.match(result.stdout, /replicas/);
  });

  it('has API and worker Deployments with probes, a preStop hook and resource limits', () => {
    const api = podSpec(find(manifests, 'Deployment', '-api')[0]).containers[0];
    assert.equal(api.livenessProbe?.httpGet?.path, '/healthz');
    assert.equal(api.readinessProbe?.httpGet?.path, '/readyz');
    assert.ok(api.lifecycle?.preStop, 'API preStop hook');
    const worker = podSpec(find(manifests, 'Deployment', '-worker')[0]);
    assert.ok(worker.containers[0].lifecycle?.preStop, 'worker preStop hook');
    // As long as a node attempt may take (NODE_ATTEMPT_TIMEOUT_MS, 10 minutes), plus the shutdown's margin.
    assert.ok(
      (worker.terminationGracePeriodSeconds ?? 0) * 1000 > 600_000,
      `grace period ${worker.terminationGracePeriodSeconds} s above a node attempt's 600 s`,
    );
    for (const m of manifests.filter((x) => x.kind === 'Deployment' || x.kind === 'Job')) {
      for (const c of podSpec(m).containers)
        assert.ok(
          c.resources?.limits?.cpu && c.resources.limits.memory,
          `${m.metadata.name}/${c.name} limits`,
        );
    }
  });

  it("gives the API pod's drain its time: terminationGracePeriodSeconds above the preStop sleep, delay, grace and margin", () => {
    const config = find(manifests, 'ConfigMap', '-config')[0] as unknown as {
      data: Record<string, string>;
    };
    const pod = podSpec(find(manifests, 'Deployment', '-api')[0]);
    const preStop = pod.containers[0].lifecycle?.preStop as { exec: { command: string[] } };
    const sleepMs = Number(preStop.exec.command[1]) * 1000;
    const drainMs =
      Number(config.data.API_SHUTDOWN_DELAY_MS ?? 0) +
      Number(config.data.API_SHUTDOWN_GRACE_MS ?? 20_000) +
      DRAIN_CLOSE_MARGIN_MS;
    assert.ok(sleepMs > 0);
    assert.ok(
      (pod.terminationGracePeriodSeconds ?? 30) * 1000 >= sleepMs + drainMs,
      `grace period ${pod.terminationGracePeriodSeconds} s, drain ${sleepMs + drainMs} ms`,
    );
  });

  it('has PDBs for both Deployments, an HPA for the API, a Service, an Ingress of the public paths only, and the search-attribute Job', () => {
    assert.equal(find(manifests, 'PodDisruptionBudget').length, 2);
    assert.equal(find(manifests, 'HorizontalPodAutoscaler', '-api').length, 1);
    find(manifests, 'Service', '-api');
    const ingress = find(manifests, 'Ingress')[0];
    const routed = (
      ingress.spec as { rules: { http: { paths: { path: string; pathType: string }[] } }[] }
    ).rules.flatMap((r) => r.http.paths);
    // Stream links (D34) and the playground too; never /metrics, /healthz, /readyz or /codec.
    assert.deepEqual(routed.map((p) => `${p.path} ${p.pathType}`).sort(), [
      '/ Exact',
      '/api Prefix',
      '/files Prefix',
      '/playground Prefix',
      '/streams Prefix',
    ]);
    // The paths Compose's proxy routes (its `@public` matcher), so a link works on both.
    const caddyfile = fs.readFileSync(path.join(REPO, 'deploy/compose/Caddyfile'), 'utf8');
    const compose = /@public path (.+)/.exec(caddyfile)?.[1].split(/\s+/);
    assert.deepEqual(
      routed.map((p) => (p.path === '/' ? '/' : `${p.path}/*`)).sort(),
      compose?.sort(),
    );
    const job = find(manifests, 'Job', '-search-attributes')[0];
    assert.match(job.metadata.annotations?.['helm.sh/hook'] ?? '', /post-install/);
    assert.match(
      JSON.stringify(job),
      /WrsAccountId:Keyword WrsPublishedWorkflowId:Keyword WrsWorkflowVersion:Int/,
    );
  });

  it("gives the search-attribute Job the service's TLS decision (an API key implies TLS) and of the secrets only the API key", async function () {
    this.timeout(60_000);
    type JobSpec = {
      containers: { env: { name: string; value?: string }[]; volumeMounts: { name: string }[] }[];
      volumes: { name: string; secret?: { items?: { key: string; path: string }[] } }[];
    };
    const job = async (values: Record<string, unknown>) => {
      const all = parseManifests(await renderChart(tools.helm, [valuesFile(values)]));
      const spec = (
        find(all, 'Job', '-search-attributes')[0].spec as { template: { spec: JobSpec } }
      ).template.spec;
      const configMap = find(all, 'ConfigMap')[0] as Manifest & { data: Record<string, string> };
      return {
        tls: spec.containers[0].env.find((e) => e.name === 'TEMPORAL_TLS')?.value,
        serviceTls: configMap.data.TEMPORAL_TLS,
        secretItems: spec.volumes.find((v) => v.name === 'secrets')?.secret?.items,
        mounts: spec.containers[0].volumeMounts.map((m) => m.name),
      };
    };
    const apiKeyOnly = [{ key: 'TEMPORAL_API_KEY', path: 'TEMPORAL_API_KEY' }];
    const withKey = {
      ...MINIMAL,
      secrets: { values: { ...MINIMAL.secrets.values, TEMPORAL_API_KEY: 'tk' } },
    };
    assert.deepEqual(await job(withKey), {
      tls: 'true',
      serviceTls: 'true',
      secretItems: apiKeyOnly,
      mounts: ['secrets', 'tmp'],
    });
    // An existing Secret whose keys name the API key: the same.
    const existing = {
      config: MINIMAL.config,
      secrets: {
        existingSecret: 'wrs-secrets',
        keys: ['MONGODB_URI', 'FILE_URL_SECRET', 'PAYLOAD_KEYS', 'TEMPORAL_API_KEY'],
      },
    };
    assert.deepEqual((await job(existing)).secretItems, apiKeyOnly);
    assert.equal((await job(existing)).tls, 'true');
    // No key, no TLS: plaintext, and no secret mounted at all.
    assert.deepEqual(await job(MINIMAL), {
      tls: 'false',
      serviceTls: 'false',
      secretItems: undefined,
      mounts: ['tmp'],
    });
    // A CA alone implies TLS too (config/index.ts temporalTls).
    const ca = { ...MINIMAL, temporal: { tls: { existingSecret: 'temporal-tls', hasCA: true } } };
    assert.equal((await job(ca)).tls, 'true');
    // The service decides the same from what its pods get: TLS on with the key.
    assert.ok(
      loadConfig({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'tk' }).temporal.tls,
      'the service turns TLS on with an API key whatever TEMPORAL_TLS says',
    );
  });

  it('pins the image by digest when one is given', () => {
    const image = (
      podSpec(find(manifests, 'Deployment', '-api')[0]).containers[0] as unknown as {
        image: string;
      }
    ).image;
    assert.match(image, /@sha256:[0-9a-f]{64}$/);
  });

  it('probes the worker over HTTP: liveness /healthz (event loop), readiness /readyz (polling)', () => {
    const worker = podSpec(find(manifests, 'Deployment', '-worker')[0]).containers[0];
    assert.deepEqual(worker.livenessProbe?.httpGet, { path: '/healthz', port: 'metrics' });
    assert.deepEqual(worker.readinessProbe?.httpGet, { path: '/readyz', port: 'metrics' });
  });

  it('caps the V8 heap of the API and the worker at 70% of their memory limits', () => {
    const heap = (suffix: string) =>
      podSpec(find(manifests, 'Deployment', suffix)[0]).containers[0].env?.find(
        (e) => e.name === 'NODE_OPTIONS',
      )?.value;
    assert.equal(heap('-api'), '--max-old-space-size=358'); // 512Mi
    assert.equal(heap('-worker'), '--max-old-space-size=716'); // 1Gi
  });

  it('lets the ingress pass 256 MiB uploads and long streams', () => {
    const annotations = find(manifests, 'Ingress')[0].metadata.annotations ?? {};
    assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-body-size'], '257m');
    assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-request-buffering'], 'off');
  });

  it("sizes the ingress's body limit from MAX_UPLOAD_BYTES plus 1 MiB of framing", async function () {
    this.timeout(60_000);
    const BODY_SIZE = 'nginx.ingress.kubernetes.io/proxy-body-size';
    const annotations = async (values: Record<string, unknown>) => {
      const all = parseManifests(
        await renderChart(tools.helm, [
          valuesFile({
            ...MINIMAL,
            ...values,
            ingress: { enabled: true, ...(values.ingress ?? {}) },
          }),
        ]),
      );
      return find(all, 'Ingress')[0].metadata.annotations ?? {};
    };
    const sized = async (maxUploadBytes: unknown) =>
      (await annotations({ config: { ...MINIMAL.config, MAX_UPLOAD_BYTES: maxUploadBytes } }))[
        BODY_SIZE
      ];
    // The default is config/index.ts's: 256 MiB.
    assert.equal(loadConfig({}).files.maxBytes, 268_435_456);
    assert.equal(await sized(null), '257m');
    // 1 GiB, as a number and as helm renders a number given with -f ("1.073741824e+09").
    assert.equal(await sized(1_073_741_824), '1025m');
    assert.equal(await sized('1.073741824e+09'), '1025m');
    assert.equal(await sized(1_000_000), '2m'); // rounded up
    // Set by the operator: theirs; no nginx annotations (another controller): none added.
    assert.equal(
      (await annotations({ ingress: { annotations: { [BODY_SIZE]: '5g' } } }))[BODY_SIZE],
      '5g',
    );
    assert.deepEqual(await annotations({ ingress: { nginxAnnotations: null } }), {});
  });

  it('ships the alert rules of deploy/prometheus/alerts.yml as a PrometheusRule, and monitors for the API and both worker ports', () => {
    const rule = find(manifests, 'PrometheusRule')[0];
    assert.deepEqual(rule.spec, readYaml(path.join(REPO, 'deploy/prometheus/alerts.yml')));
    const podMonitor = find(manifests, 'PodMonitor', '-worker')[0].spec as {
      podMetricsEndpoints: { port: string; relabelings: { replacement: string }[] }[];
    };
    assert.deepEqual(
      podMonitor.podMetricsEndpoints.map((e) => [e.port, e.relabelings[0].replacement]),
      [
        ['metrics', 'wrs-worker'],
        ['sdk-metrics', 'wrs-worker-sdk'],
      ],
    );
    const serviceMonitor = find(manifests, 'ServiceMonitor', '-api')[0].spec as {
      endpoints: { port: string; relabelings: { replacement: string }[] }[];
    };
    assert.equal(serviceMonitor.endpoints[0].port, 'http');
    assert.equal(serviceMonitor.endpoints[0].relabelings[0].replacement, 'wrs-api');
    for (const m of manifests.filter((x) => OPERATOR_KINDS.has(x.kind)))
      assert.equal(m.apiVersion, 'monitoring.coreos.com/v1');
  });

  it('restricts worker egress to DNS, Temporal, MongoDB and the providers, and API ingress to the ingress controller and Prometheus', () => {
    type Peer = Record<string, unknown>;
    type Policy = {
      policyTypes: string[];
      ingress: { from: Peer[]; ports: { port: number | string }[] }[];
      egress?: { to: Peer[]; ports: { port: number | string }[] }[];
    };
    const worker = find(manifests, 'NetworkPolicy', '-worker')[0].spec as Policy;
    assert.deepEqual(worker.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(
      worker.egress?.map((r) => r.ports.map((p) => p.port)),
      [[53, 53], [7233], [27017], [443]],
    );
    assert.deepEqual(worker.egress?.[3].to, [{ ipBlock: { cidr: '203.0.113.0/24' } }]);
    const api = find(manifests, 'NetworkPolicy', '-api')[0].spec as Policy;
    assert.deepEqual(api.policyTypes, ['Ingress']);
    assert.equal(api.ingress.length, 1);
    assert.deepEqual(
      api.ingress[0].from.map((p) => JSON.stringify(p)),
      [
        '{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"ingress-nginx"}},"podSelector":{"matchLabels":{"app.kubernetes.io/name":"ingress-nginx"}}}',
        '{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}',
      ],
    );
  });
});
