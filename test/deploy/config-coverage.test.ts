// Every variable of config/index.ts reaches the service's containers, from the Compose file and from
// the Helm chart (as X or as X_FILE), so a setting added to the service cannot be silently dropped in production.
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  CHART_DIR,
  COMPOSE_FILE,
  deployTools,
  envVariables,
  parseManifests,
  readYaml,
  renderChart,
  valuesFile,
  type Manifest,
} from '../support/deploy';

/** The variables `names` misses: neither X nor X_FILE is in it. */
function unreachable(names: Iterable<string>): string[] {
  const set = new Set(names);
  return envVariables().filter((v) => !set.has(v) && !set.has(`${v}_FILE`));
}

describe('configuration coverage of the deployments', function () {
  it('the Compose file passes every variable to the API and the worker', () => {
    const compose = readYaml<{
      'x-wrs-environment': Record<string, unknown>;
      services: Record<string, { environment?: Record<string, unknown> }>;
    }>(COMPOSE_FILE);
    assert.deepEqual(unreachable(Object.keys(compose['x-wrs-environment'])), []);
    for (const service of ['api', 'worker']) {
      assert.deepEqual(
        unreachable(Object.keys(compose.services[service].environment ?? {})),
        [],
        service,
      );
    }
  });

  it('the Helm chart can set every variable on the API and the worker', async function () {
    this.timeout(30 * 60_000);
    const { helm } = await deployTools();
    // Every variable the values list as unset (null) gets a value, so the rendering shows where each one lands.
    const values = readYaml<{
      config: Record<string, unknown>;
      secrets: { values: Record<string, unknown> };
    }>(path.join(CHART_DIR, 'values.yaml'));
    const set = (o: Record<string, unknown>, v: string) =>
      Object.fromEntries(Object.keys(o).map((k) => [k, o[k] ?? v]));
    const overrides = valuesFile({
      config: set(values.config, '1'),
      secrets: { values: set(values.secrets.values, 'x'.repeat(32)) },
      temporal: {
        tls: {
          enabled: true,
          existingSecret: 'temporal-tls',
          hasCA: true,
          hasClientCert: true,
          serverName: 'temporal.example',
        },
      },
    });
    const manifests = parseManifests(await renderChart(helm, [overrides]));
    const configMap = manifests.find((m) => m.kind === 'ConfigMap') as Manifest & {
      data: Record<string, string>;
    };
    for (const suffix of ['-api', '-worker']) {
      const deployment = manifests.find(
        (m) => m.kind === 'Deployment' && m.metadata.name.endsWith(suffix),
      )!;
      const container = (
        deployment.spec as {
          template: {
            spec: {
              containers: {
                env?: { name: string }[];
                envFrom?: { configMapRef?: { name: string } }[];
              }[];
            };
          };
        }
      ).template.spec.containers[0];
      assert.equal(container.envFrom?.[0].configMapRef?.name, configMap.metadata.name);
      const names = [...Object.keys(configMap.data), ...(container.env ?? []).map((e) => e.name)];
      assert.deepEqual(unreachable(names), [], suffix);
    }
  });
});
