/**
 * Python tools the test suite runs as child processes, installed from PyPI into a virtualenv in
 * the versioned cache (`~/.cache/wrs/schemathesis-<version>/venv`), never into the repo or the
 * system Python. Exact versions with sha256 hashes come from stack/schemathesis-requirements.txt.
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
export function schemathesisVersion(requirements = fs.readFileSync(SCHEMATHESIS_REQUIREMENTS, 'utf8')): string {
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
export async function ensureSchemathesis(opts: EnsureOptions & { python?: string } = {}): Promise<PythonTool> {
  const log = opts.log ?? (() => {});
  const requirements = fs.readFileSync(SCHEMATHESIS_REQUIREMENTS, 'utf8');
  const version = schemathesisVersion(requirements);
  const pinsHash = createHash('sha256').update(requirements).digest('hex');
  const dir = path.join(opts.cacheDir ?? defaultCacheDir(), `schemathesis-${version}`);
  const venv = path.join(dir, 'venv');
  const tool = { command: path.join(venv, 'bin', 'python'), args: ['-m', 'schemathesis.cli'], version };
  if (isBuiltFrom(venv, pinsHash)) return tool;

  fs.mkdirSync(dir, { recursive: true });
  // A unique build dir per process: concurrent installers never share one, and the first rename wins.
  const build = path.join(dir, `.build-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    log(`installing schemathesis ${version} from PyPI into ${venv}`);
    const python = opts.python ?? 'python3';
    await run(python, ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'], log).catch((err: Error) => {
      throw new Error(`schemathesis ${version} needs Python 3.10 or later as \`${python}\`: ${err.message}`);
    });
    await run(python, ['-m', 'venv', build], log);
    const pip = path.join(build, 'bin', 'python');
    await run(pip, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--require-hashes', '--only-binary=:all:', '-r', SCHEMATHESIS_REQUIREMENTS], log);
    await run(pip, ['-m', 'schemathesis.cli', '--version'], log);
    fs.writeFileSync(path.join(build, MARKER), pinsHash);
    // Built from other pins (the file changed without a version bump): replace it.
    if (fs.existsSync(venv) && !isBuiltFrom(venv, pinsHash)) fs.rmSync(venv, { recursive: true, force: true });
    try {
      fs.renameSync(build, venv);
      log(`installed ${venv}`);
    } catch (err) {
      // Another process renamed its complete build into place first; use that one.
      if (!isBuiltFrom(venv, pinsHash)) throw err;
    }
    return tool;
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
      reject(err.code === 'ENOENT' ? new Error(`\`${command}\` was not found on PATH; install Python 3.10+ with its venv module`) : err),
    );
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit code ${code}`}):\n${tail.join('\n')}`));
    });
  });
}
