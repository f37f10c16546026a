/**
 * Schemas the deployment tests (test/deploy) validate against, fetched from the registries reachable here.
 *
 * The Compose Specification schema: the copy inside compose-go (the Compose reference loader, which
 * `docker compose` itself uses), a Go module fetched with `go mod download` from the module proxy.
 *
 * Kubernetes JSON schemas for kubeconform (test/deploy/helm.test.ts). The usual source, a GitHub repository,
 * is out of reach here, so they come from PyPI: the `kubernetes-validate` wheel ships the schemas of every
 * Kubernetes minor version from 1.25 on (generated from each release's OpenAPI document). The wheel is
 * fetched with pip (pinned by version and sha256) and the wanted versions are unpacked into the cache,
 * `~/.cache/wrs/kubernetes-json-schema-<wheel version>/v<k8s version>-local-strict/<kind>-<group>-<version>.json`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { defaultCacheDir, type EnsureOptions } from './binaries';

/** compose-go release whose schema/compose-spec.json is the Compose Specification used in CI. */
export const COMPOSE_GO_VERSION = '2.16.2';
const COMPOSE_GO_MODULE = 'github.com/compose-spec/compose-go/v2';

/** Returns the path of the Compose Specification JSON schema, copying it out of the Go module cache when missing. */
export async function ensureComposeSpecSchema(opts: EnsureOptions = {}): Promise<string> {
  const log = opts.log ?? (() => {});
  const target = path.join(
    opts.cacheDir ?? defaultCacheDir(),
    `compose-spec-${COMPOSE_GO_VERSION}`,
    'compose-spec.json',
  );
  if (fs.existsSync(target)) return target;
  log(`fetching ${COMPOSE_GO_MODULE}@v${COMPOSE_GO_VERSION} for its compose-spec.json`);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // An empty working dir keeps any surrounding go.mod out of the download.
  const work = fs.mkdtempSync(path.join(path.dirname(target), '.build-'));
  try {
    let out = '';
    await run(
      'go',
      ['mod', 'download', '-json', `${COMPOSE_GO_MODULE}@v${COMPOSE_GO_VERSION}`],
      log,
      work,
      (text) => (out = text),
    );
    const info = JSON.parse(out) as { Dir?: string; Error?: string };
    if (!info.Dir)
      throw new Error(`go mod download ${COMPOSE_GO_MODULE} failed: ${info.Error ?? out}`);
    const tmp = path.join(work, 'compose-spec.json');
    fs.copyFileSync(path.join(info.Dir, 'schema', 'compose-spec.json'), tmp);
    fs.chmodSync(tmp, 0o644);
    fs.renameSync(tmp, target);
    return target;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export const KUBERNETES_VALIDATE_VERSION = '1.37.0';
const KUBERNETES_VALIDATE_SHA256 =
  '85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9';
/** The Kubernetes versions the chart is validated against: the oldest its kubeVersion allows, and the newest. */
export const KUBERNETES_VERSIONS = ['1.27.0', '1.37.0'];

/** Where the schemas live; a kubeconform -schema-location template for them. */
export function kubernetesSchemaDir(cacheDir = defaultCacheDir()): string {
  return path.join(cacheDir, `kubernetes-json-schema-${KUBERNETES_VALIDATE_VERSION}`);
}
export function kubeconformSchemaLocation(cacheDir = defaultCacheDir()): string {
  return path.join(
    kubernetesSchemaDir(cacheDir),
    '{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json',
  );
}

// Unpacks the strict schemas of the given versions. Their $refs point at "/api/_definitions.json" (the
// package resolves them in memory); rewritten to the absolute file URL of the sibling file in its final
// place, which kubeconform follows (it does not resolve a relative file reference).
const UNPACK = `
import sys, zipfile, os
wheel, out, final, versions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
z = zipfile.ZipFile(wheel)
for v in versions:
    prefix = 'kubernetes_validate/kubernetes-json-schema/v%s-local-strict/' % v
    names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith('.json')]
    if not names:
        sys.exit('no schemas for Kubernetes %s in %s' % (v, wheel))
    target = os.path.join(out, 'v%s-local-strict' % v)
    ref = '"file://%s/v%s-local-strict/_definitions.json#' % (final, v)
    os.makedirs(target)
    for n in names:
        text = z.read(n).decode('utf-8').replace('"/api/_definitions.json#', ref)
        with open(os.path.join(target, n[len(prefix):]), 'w') as f:
            f.write(text)
`;

/** Returns the schema directory, downloading and unpacking the wheel only when a wanted version is missing. */
export async function ensureKubernetesSchemas(
  opts: EnsureOptions & { python?: string } = {},
): Promise<string> {
  const log = opts.log ?? (() => {});
  const dir = kubernetesSchemaDir(opts.cacheDir);
  const complete = () =>
    KUBERNETES_VERSIONS.every((v) =>
      fs.existsSync(path.join(dir, `v${v}-local-strict`, '_definitions.json')),
    );
  if (complete()) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // A private build dir renamed into place: readers see all of it or nothing, concurrent installers never collide.
  const build = `${dir}.build-${process.pid}-${randomBytes(4).toString('hex')}`;
  const python = opts.python ?? 'python3';
  try {
    fs.mkdirSync(build);
    log(
      `downloading kubernetes-validate ${KUBERNETES_VALIDATE_VERSION} from PyPI for its Kubernetes JSON schemas`,
    );
    const requirements = path.join(build, 'requirements.txt');
    fs.writeFileSync(
      requirements,
      `kubernetes-validate==${KUBERNETES_VALIDATE_VERSION} --hash=sha256:${KUBERNETES_VALIDATE_SHA256}\n`,
    );
    await run(
      python,
      [
        '-m',
        'pip',
        'download',
        '--quiet',
        '--disable-pip-version-check',
        '--no-deps',
        '--only-binary=:all:',
        '--require-hashes',
        '-r',
        requirements,
        '-d',
        build,
      ],
      log,
    );
    const wheel = fs.readdirSync(build).find((n) => n.endsWith('.whl'));
    if (!wheel) throw new Error('pip download left no wheel');
    const out = path.join(build, 'schemas');
    await run(
      python,
      ['-c', UNPACK, path.join(build, wheel), out, dir, ...KUBERNETES_VERSIONS],
      log,
    );
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(out, dir);
    } catch (err) {
      if (!complete()) throw err; // another process put a complete copy in place first
    }
    log(`unpacked Kubernetes schemas ${KUBERNETES_VERSIONS.join(', ')} into ${dir}`);
    return dir;
  } finally {
    fs.rmSync(build, { recursive: true, force: true });
  }
}

/** Runs a command to completion; `onStdout` gets its stdout, `log` every output line; rejects with the tail. */
function run(
  command: string,
  args: string[],
  log: (line: string) => void,
  cwd?: string,
  onStdout?: (text: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      onStdout?.(stdout);
      output += onStdout ? '' : stdout;
      for (const line of output.split('\n')) if (line.trim()) log(line);
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `${command} ${args[0]} ${args[1] ?? ''} failed (exit ${code}):\n${output.slice(-2000)}`,
          ),
        );
    });
  });
}
