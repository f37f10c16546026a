/**
 * Python tools the test suite runs as child processes, installed from PyPI into virtualenvs in
 * the versioned cache (`~/.cache/wrs/schemathesis-<version>/venv`, `~/.cache/wrs/python-client-<pins>/venv`),
 * never into the repo or the system Python. Exact versions with sha256 hashes come from
 * tools/stack/schemathesis-requirements.txt and clients/python/requirements-test.txt.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { defaultCacheDir, type EnsureOptions } from './binaries';

/** The pinned requirements (every dependency, with hashes); its schemathesis line is the version. */
export const SCHEMATHESIS_REQUIREMENTS = path.join(__dirname, 'schemathesis-requirements.txt');

/** How to run a Python tool: `command` followed by `args`, then the tool's own arguments. */
export interface PythonTool {
  command: string;
  args: string[];
  version: string;
}

/** The schemathesis version pinned in the requirements file. */
export function schemathesisVersion(
  requirements = fs.readFileSync(SCHEMATHESIS_REQUIREMENTS, 'utf8'),
): string {
  const match = /^schemathesis==(\S+)/m.exec(requirements);
  if (!match) throw new Error(`${SCHEMATHESIS_REQUIREMENTS} pins no schemathesis version`);
  return match[1];
}

/**
 * Returns how to run schemathesis, creating its virtualenv with `pip install --require-hashes` only
 * when it is missing or was built from other pins. Run as `python -m schemathesis.cli`: the venv is
 * built under a temporary name and renamed into place, which breaks the absolute shebangs of its
 * console scripts (`st`) but not the interpreter, whose prefix is found from pyvenv.cfg next to it.
 */
export async function ensureSchemathesis(
  opts: EnsureOptions & { python?: string } = {},
): Promise<PythonTool> {
  const requirements = fs.readFileSync(SCHEMATHESIS_REQUIREMENTS, 'utf8');
  const version = schemathesisVersion(requirements);
  const python = await ensureVenv(opts, {
    name: `schemathesis ${version}`,
    dir: `schemathesis-${version}`,
    requirements: SCHEMATHESIS_REQUIREMENTS,
    check: ['-m', 'schemathesis.cli', '--version'],
  });
  return { command: python, args: ['-m', 'schemathesis.cli'], version };
}

/** The Python client's pinned test environment (clients/python/requirements-test.txt). */
export const PYTHON_CLIENT_REQUIREMENTS = path.join(
  __dirname,
  '..',
  '..',
  'clients',
  'python',
  'requirements-test.txt',
);

/**
 * Returns the interpreter of the Python client's test venv (httpx, httpx-sse, standardwebhooks,
 * pytest, setuptools; hash-pinned), building it when missing or built from other pins. The client
 * itself is not in it: test/clients/python.test.ts pip-installs the working tree's copy per run.
 */
export async function ensurePythonClientEnv(
  opts: EnsureOptions & { python?: string } = {},
): Promise<string> {
  const pins = createHash('sha256')
    .update(fs.readFileSync(PYTHON_CLIENT_REQUIREMENTS))
    .digest('hex')
    .slice(0, 12);
  return ensureVenv(opts, {
    name: 'the Python client’s test environment',
    dir: `python-client-${pins}`,
    requirements: PYTHON_CLIENT_REQUIREMENTS,
    check: ['-c', 'import httpx, httpx_sse, standardwebhooks, pytest'],
  });
}

/** A venv at `<cache>/<dir>/venv` installed from a hash-pinned requirements file; returns its python. */
async function ensureVenv(
  opts: EnsureOptions & { python?: string },
  spec: { name: string; dir: string; requirements: string; check: string[] },
): Promise<string> {
  const log = opts.log ?? (() => {});
  const pinsHash = createHash('sha256')
    .update(fs.readFileSync(spec.requirements, 'utf8'))
    .digest('hex');
  const dir = path.join(opts.cacheDir ?? defaultCacheDir(), spec.dir);
  const venv = path.join(dir, 'venv');
  const interpreter = path.join(venv, 'bin', 'python');
  if (isBuiltFrom(venv, pinsHash)) return interpreter;

  fs.mkdirSync(dir, { recursive: true });
  // A unique build dir per process: concurrent installers never share one, and the first rename wins.
  const build = path.join(dir, `.build-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    log(`installing ${spec.name} from PyPI into ${venv}`);
    const python = opts.python ?? 'python3';
    await run(
      python,
      ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'],
      log,
    ).catch((err: Error) => {
      throw new Error(`${spec.name} needs Python 3.10 or later as \`${python}\`: ${err.message}`);
    });
    await run(python, ['-m', 'venv', build], log);
    const pip = path.join(build, 'bin', 'python');
    await run(
      pip,
      [
        '-m',
        'pip',
        'install',
        '--quiet',
        '--disable-pip-version-check',
        '--require-hashes',
        '--only-binary=:all:',
        '-r',
        spec.requirements,
      ],
      log,
    );
    await run(pip, spec.check, log);
    fs.writeFileSync(path.join(build, MARKER), pinsHash);
    // Built from other pins (the file changed without a version bump): replace it.
    if (fs.existsSync(venv) && !isBuiltFrom(venv, pinsHash))
      fs.rmSync(venv, { recursive: true, force: true });
    try {
      fs.renameSync(build, venv);
      log(`installed ${venv}`);
    } catch (err) {
      // Another process renamed its complete build into place first; use that one.
      if (!isBuiltFrom(venv, pinsHash)) throw err;
    }
    return interpreter;
  } finally {
    fs.rmSync(build, { recursive: true, force: true });
  }
}

/** True when the venv in `cacheDir` exists and was built from the current pins (nothing to install). */
export function isSchemathesisInstalled(cacheDir = defaultCacheDir()): boolean {
  const requirements = fs.readFileSync(SCHEMATHESIS_REQUIREMENTS, 'utf8');
  const venv = path.join(cacheDir, `schemathesis-${schemathesisVersion(requirements)}`, 'venv');
  return isBuiltFrom(venv, createHash('sha256').update(requirements).digest('hex'));
}

/** Written last into a finished venv: the sha256 of the requirements it was installed from. */
const MARKER = '.wrs-requirements-sha256';

function isBuiltFrom(venv: string, pinsHash: string): boolean {
  try {
    return fs.readFileSync(path.join(venv, MARKER), 'utf8') === pinsHash;
  } catch {
    return false;
  }
}

/** Runs a command, streaming its output lines to `log`; rejects with the output tail on failure. */
function run(command: string, args: string[], log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        log(line);
        tail.push(line);
        if (tail.length > 40) tail.shift();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error(
              `\`${command}\` was not found on PATH; install Python 3.10+ with its venv module`,
            )
          : err,
      ),
    );
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `${command} ${args.join(' ')} failed (${signal ?? `exit code ${code}`}):\n${tail.join('\n')}`,
          ),
        );
    });
  });
}
