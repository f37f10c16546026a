// `prestart` / `pretest`: on a fresh clone, install the npm dependencies first, so the quick start is one command each.
const { existsSync, statSync } = require('node:fs');
const { execSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const marker = path.join(root, 'node_modules', '.package-lock.json');
const lock = path.join(root, 'package-lock.json');
if (!existsSync(marker) || statSync(marker).mtimeMs < statSync(lock).mtimeMs) {
  process.stderr.write('installing npm dependencies ...\n');
  // `npm install`, not `npm ci`: see .ci/run for why this registry makes `npm ci` refuse the lock.
  execSync('npm install --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}
