/**
 * The lint rules of eslint.config.mjs that keep every outbound request of worker code behind the
 * SSRF guard (lib/net/ssrf.ts): each way of making a request without it fails lint in activities/,
 * lib/ and worker/, the guard itself and servers stay allowed, and today's code passes. Linted
 * through ESLint's Node API with the repository's own configuration, as CI runs it.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { ESLint } from 'eslint';

const ROOT = path.resolve(__dirname, '../../..');
const GUARD_RULES = new Set([
  'no-restricted-globals',
  'no-restricted-syntax',
  'no-restricted-imports',
]);

/** The guard's lint errors for `code` as if it were the file at `file` (relative to the repository). */
async function guardErrors(eslint: ESLint, file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return result.messages
    .filter((m) => m.ruleId && GUARD_RULES.has(m.ruleId))
    .map((m) => `${m.ruleId}: ${m.message}`);
}

describe('lint: no outbound request outside the SSRF guard', function () {
  this.timeout(60_000);
  const eslint = new ESLint({ cwd: ROOT });

  const unguarded: Array<[file: string, code: string]> = [
    ['activities/probe.ts', `export const f = (u: string) => fetch(u);`],
    ['activities/probe.ts', `export const f = (u: string) => globalThis.fetch(u);`],
    [
      'activities/probe.ts',
      `import http from 'node:http';\nexport const f = (u: string) => http.get(u);`,
    ],
    [
      'activities/probe.ts',
      `import * as https from 'https';\nexport const f = (u: string) => https.request(u);`,
    ],
    [
      'activities/probe.ts',
      `import { request } from 'undici';\nexport const f = (u: string) => request(u);`,
    ],
    ['activities/probe.ts', `import OpenAI from 'openai';\nexport const c = new OpenAI();`],
    ['activities/probe.ts', `export const f = () => import('node:http');`],
    ['activities/probe.ts', `const h = require('https');\nexport default h;`],
    [
      'lib/webhooks/probe.ts',
      `import net from 'node:net';\nexport const s = net.connect(80, '10.0.0.1');`,
    ],
    ['lib/files/probe.ts', `export const ws = new WebSocket('ws://127.0.0.1');`],
    [
      'worker/probe.ts',
      `import http from 'node:http';\nexport const f = (u: string) => http.request(u);`,
    ],
    [
      'worker/probe.ts',
      `import { get } from 'node:http';\nexport const f = (u: string) => get(u);`,
    ],
    ['worker/probe.ts', `export const f = (u: string) => fetch(u, { method: 'POST' });`],
  ];
  for (const [file, code] of unguarded) {
    it(`fails lint in ${file}: ${code.split('\n').at(-1)}`, async () => {
      const errors = await guardErrors(eslint, file, code);
      assert.ok(errors.length > 0, 'no lint error');
      assert.ok(
        errors.every((e) => e.includes('lib/net/ssrf.ts')),
        `each error points at the guard: ${errors.join('; ')}`,
      );
    });
  }

  it('passes the guard itself, calls through it, and a server in the worker', async () => {
    assert.deepEqual(
      await guardErrors(
        eslint,
        'lib/net/ssrf.ts',
        `import http from 'node:http';\nexport const f = (u: string) => http.request(u);`,
      ),
      [],
    );
    assert.deepEqual(
      await guardErrors(
        eslint,
        'activities/probe.ts',
        `import { guardedGet } from '../lib/net/ssrf';\nexport const f = (u: string) => guardedGet(u, { allowHttp: false, allowPrivate: false, signal: AbortSignal.timeout(1000) });`,
      ),
      [],
    );
    assert.deepEqual(
      await guardErrors(
        eslint,
        'worker/probe.ts',
        `import http from 'node:http';\nexport const s = http.createServer();`,
      ),
      [],
    );
  });

  it('finds no unguarded request in the code as it stands', async () => {
    const results = await eslint.lintFiles(['activities', 'lib', 'worker', 'store', 'workflows']);
    const errors = results.flatMap((r) =>
      r.messages
        .filter((m) => m.ruleId && GUARD_RULES.has(m.ruleId))
        .map((m) => `${path.relative(ROOT, r.filePath)}:${m.line} ${m.message}`),
    );
    assert.deepEqual(errors, []);
  });
});
