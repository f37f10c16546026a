/**
 * The folder boundaries of eslint.config.mjs (docs/architecture.md "Code layout and its
 * boundaries") for the folders added last: config/, activities/, worker/, clients/,
 * playground/ and the concerns inside api/ each refuse an import against the layering, and allow
 * the ones they need.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { ESLint } from 'eslint';

const ROOT = path.resolve(__dirname, '..');

async function importErrors(eslint: ESLint, file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return result.messages
    .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')
    .map((m) => m.message);
}

describe('lint: folder boundaries', function () {
  this.timeout(60_000);
  const eslint = new ESLint({ cwd: ROOT });

  const refused: Array<[file: string, code: string]> = [
    ['config/probe.ts', `import { findRun } from '../store/runs';\nexport const f = findRun;`],
    [
      'activities/probe.ts',
      `import { readRunAnswer } from '../api/runs/read-run';\nexport const f = readRunAnswer;`,
    ],
    [
      'activities/probe.ts',
      `import { runWorkflow } from '../workflows/run-workflow';\nexport const f = runWorkflow;`,
    ],
    ['worker/probe.ts', `import { startApi } from '../api/start-api';\nexport const f = startApi;`],
    [
      'clients/typescript/probe.ts',
      `import { findRun } from '../../store/runs';\nexport const f = findRun;`,
    ],
    [
      'clients/typescript/probe.ts',
      `import { RunListSchema } from '../../api/contract/response-schemas';\nexport const s = RunListSchema;`,
    ],
    [
      'playground/src/probe.ts',
      `import { RunListSchema } from '../../api/contract/response-schemas';\nexport const s = RunListSchema;`,
    ],
    // Inside api/: the concerns below the use cases never reach runs/, and nothing below reaches a route.
    [
      'api/limits/probe.ts',
      `import { readRunAnswer } from '../runs/read-run';\nexport const f = readRunAnswer;`,
    ],
    [
      'api/stream/probe.ts',
      `import { runsRoutes } from '../routes/runs';\nexport const f = runsRoutes;`,
    ],
    ['api/runs/probe.ts', `import { routeDeps } from '../deps';\nexport const f = routeDeps;`],
    [
      'api/runs/probe.ts',
      `import { startApi } from '../../worker/main';\nexport const f = startApi;`,
    ],
  ];
  for (const [file, code] of refused) {
    it(`refuses in ${file}: ${code.split('\n')[0]}`, async () => {
      assert.equal((await importErrors(eslint, file, code)).length, 1);
    });
  }

  it('allows what each folder needs', async () => {
    const allowed: Array<[string, string]> = [
      [
        'config/probe.ts',
        `import { MAX_ROWS } from '../domain/run-size';\nexport const n = MAX_ROWS;`,
      ],
      [
        'activities/probe.ts',
        `import type { WebhookArgs } from '../workflows/definitions';\nexport type A = WebhookArgs;`,
      ],
      [
        'clients/typescript/probe.ts',
        `import type { StreamLink } from '../../api/contract/response-schemas';\nexport type L = StreamLink;`,
      ],
      [
        'playground/src/probe.ts',
        `import { isTerminal } from '../../domain/run';\nexport const f = isTerminal;`,
      ],
      [
        'api/runs/probe.ts',
        `import { resolveVersion } from '../workflows/resolve-version';\nexport const f = resolveVersion;`,
      ],
    ];
    for (const [file, code] of allowed)
      assert.deepEqual(await importErrors(eslint, file, code), [], file);
  });
});
