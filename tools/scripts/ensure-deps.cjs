// `prestart` / `pretest`: on a fresh clone, install the npm dependencies first, then build the servers (and for
// the tests, the tools) into ~/.cache/wrs, so the quick start is one command each and nothing builds later inside
// a test or during start-up. `node tools/scripts/ensure-deps.cjs --servers` builds only what `npm start` needs;
// `--npm-only` stops after the npm packages (.ci/run: typecheck, lint and the unit tier need nothing more).
const { existsSync, statSync } = require('node:fs');
const { execFileSync, execSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const marker = path.join(root, 'node_modules', '.package-lock.json');
const lock = path.join(root, 'package-lock.json');
if (!existsSync(marker) || statSync(marker).mtimeMs < statSync(lock).mtimeMs) {
  process.stderr.write('installing npm dependencies ...\n');
  // `npm install`, not `npm ci`: `npm ci` refuses any lock file here, because the registry this machine reaches
  // serves no macOS/Windows builds of @swc/core (a dependency of Temporal's workflow bundler), so their optional
  // entries can never be in the lock. `npm install` installs exactly the locked versions that exist.
  execSync('npm install --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}
if (process.argv.includes('--npm-only')) process.exit(0);
// tsx exists only now (it came with the install above); tools/stack/install.ts prints its own progress lines.
const tsx = path.join(root, 'node_modules', '.bin', 'tsx');
try {
  execFileSync(tsx, [path.join(root, 'tools', 'stack', 'install.ts'), ...process.argv.slice(2)], {
    cwd: root,
    stdio: 'inherit',
  });
} catch {
  process.exit(1); // the build printed why
}
