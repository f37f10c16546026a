// The OpenAPI document (D25) as third-party tools read it. Redocly (recommended rules) and
// Spectral (`spectral:oas`) find no error in it, and openapi-typescript on default options turns it
// into types that compile under `tsc --strict` with a typed openapi-fetch use of the operations
// (a start without its defaulted `stream`, its 202/200, a run, a page, a stream link).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument } from '../../../api/contract/openapi-document';

const ROOT = path.join(__dirname, '..', '..', '..');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);

/** Runs a tool to its end: exit code and combined output (a lint failure is an exit code, not a throw). */
function run(
  command: string,
  args: string[],
  cwd = ROOT,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : NaN) : 0;
        if (Number.isNaN(code)) return reject(err);
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** A typed use of the generated client; it must compile, so the operations' answers are typed and optional fields optional. */
const USE = `
import createClient from 'openapi-fetch';
import type { components, paths } from './api';

type Run = components['schemas']['Run'];
type IsUnknown<T> = unknown extends T ? true : false;
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:8080', headers: { Authorization: 'Bearer wrs_sk_x' } });

export async function use(): Promise<Run['status'] | undefined> {
  // \`stream\` has a default, so a start without it compiles.
  const started = await client.POST('/api/v1/responses', { body: { workflowId: 'greet', inputs: { name: 'Ada' } } });
  const typed: IsUnknown<typeof started.data> = false;
  if (started.error) return started.error.error.type === 'invalid_request_error' ? undefined : undefined;
  // 202 (AsyncStart), 200 (the Run after Prefer: wait) or, for a stream, its events (ServerSentEvent).
  const data = started.data;
  const runId: string = 'run_id' in data ? data.run_id : 'status' in data ? data.id : '';
  const run = await client.GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
  const link = await client.POST('/api/v1/runs/{runId}/stream-link', { params: { path: { runId } }, body: { ttl_seconds: 60 } });
  const bare = await client.POST('/api/v1/runs/{runId}/stream-link', { params: { path: { runId } } });
  const url: string | undefined = link.data?.url ?? bare.data?.expires_at;
  const page = await client.GET('/api/v1/runs', { params: { query: { limit: 10 } } });
  const more: boolean | undefined = page.data?.has_more;
  void typed; void url; void more;
  return run.data?.status;
}
`;

describe('OpenAPI document through third-party tools', function () {
  this.timeout(180_000);
  let dir: string;
  let file: string;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-openapi-'));
    file = path.join(dir, 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(buildOpenApiDocument(), null, 2));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('has no error under Redocly’s recommended rules', async () => {
    const { code, output } = await run(bin('redocly'), [
      'lint',
      '--extends=recommended',
      '--format=stylish',
      file,
    ]);
    assert.equal(code, 0, output);
    assert.match(output, /Woohoo|You have \d+ warnings?|valid/i, output);
  });

  it('has no error under Spectral’s spectral:oas', async () => {
    const { code, output } = await run(bin('spectral'), [
      'lint',
      '--ruleset',
      path.join(ROOT, '.spectral.yaml'),
      '--fail-severity=error',
      '--format=text',
      file,
    ]);
    assert.equal(code, 0, output);
    assert.doesNotMatch(output, /\berror\b/, output);
  });

  it('generates with openapi-typescript a client that compiles with a typed openapi-fetch use', async () => {
    const generated = await run(bin('openapi-typescript'), [
      file,
      '--output',
      path.join(dir, 'api.d.ts'),
    ]);
    assert.equal(generated.code, 0, generated.output);
    const types = fs.readFileSync(path.join(dir, 'api.d.ts'), 'utf8');
    // Every answer's body is typed: no media type of a response comes out as `unknown`.
    assert.doesNotMatch(types, /"[\w*-]+\/[\w*.+-]+": unknown;/);
    assert.match(types, /stream\?: boolean;/, 'a field with a default is optional in a request');
    fs.writeFileSync(path.join(dir, 'use.ts'), USE);
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const tsc = await run(
      bin('tsc'),
      [
        '--strict',
        '--noEmit',
        '--skipLibCheck',
        '--target',
        'es2022',
        '--module',
        'esnext',
        '--moduleResolution',
        'bundler',
        'use.ts',
      ],
      dir,
    );
    assert.equal(tsc.code, 0, tsc.output);
  });
});
