/**
 * The lint rule of eslint.config.mjs that keeps every collection query in store/: each way of
 * querying a collection fails lint in api/, activities/, cli/, lib/, worker/ and workflows/, the
 * same code passes in store/, and today's code passes. Linted through ESLint's Node API with the
 * repository's own configuration, as CI runs it.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { ESLint } from 'eslint';

const ROOT = path.resolve(__dirname, '../..');
const MESSAGE = 'Collection queries live in store/';

/** The store-only lint errors for `code` as if it were the file at `file` (relative to the repository). */
async function queryErrors(eslint: ESLint, file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return result.messages.filter((m) => m.message.startsWith(MESSAGE)).map((m) => m.message);
}

describe('lint: collection queries only in store/', function () {
  this.timeout(60_000);
  const eslint = new ESLint({ cwd: ROOT });

  const queries: Array<[file: string, code: string]> = [
    ['api/runs/probe.ts', `export const f = (c: any) => c.runs.findOne({ _id: 'x' });`],
    [
      'api/runs/probe.ts',
      `export const f = (deps: any) => deps.collections.workflows.find({}).toArray();`,
    ],
    ['api/routes/probe.ts', `export const f = (db: any) => db.collection('runs').findOne({});`],
    ['activities/probe.ts', `export const f = (c: any) => c.ledger.countDocuments({});`],
    ['cli/commands/probe.ts', `export const f = (c: any) => c.apiKeys.updateOne({}, {});`],
    ['lib/files/probe.ts', `export const f = (c: any) => c.itemBlocks.insertMany([]);`],
    ['worker/probe.ts', `export const f = (c: any) => c.runChunks.deleteMany({});`],
    ['config/probe.ts', `export const f = (c: any) => c.accounts.aggregate([]);`],
  ];
  for (const [file, code] of queries) {
    it(`fails lint in ${file}: ${code}`, async () => {
      const errors = await queryErrors(eslint, file, code);
      assert.equal(errors.length, 1, `lint errors: ${JSON.stringify(errors)}`);
    });
  }

  it('passes the same queries in store/, and array finds elsewhere', async () => {
    for (const [, code] of queries)
      assert.deepEqual(await queryErrors(eslint, 'store/probe.ts', code), [], code);
    assert.deepEqual(
      await queryErrors(
        eslint,
        'api/runs/probe.ts',
        `export const f = (run: { nodes: string[] }) => run.nodes.find((n) => n === 'a');`,
      ),
      [],
    );
  });

  it('keeps the SSRF guard where both rules apply', async () => {
    const [result] = await eslint.lintText(`export const f = (u: string) => globalThis.fetch(u);`, {
      filePath: path.join(ROOT, 'activities/probe.ts'),
    });
    assert.ok(
      result.messages.some((m) => m.message.includes('lib/net/ssrf.ts')),
      JSON.stringify(result.messages),
    );
  });

  it('finds no query outside store/ in the code as it stands', async () => {
    const results = await eslint.lintFiles([
      'api',
      'activities',
      'cli',
      'config',
      'lib',
      'worker',
      'workflows',
    ]);
    const errors = results.flatMap((r) =>
      r.messages
        .filter((m) => m.message.startsWith(MESSAGE))
        .map((m) => `${path.relative(ROOT, r.filePath)}:${m.line} ${m.message}`),
    );
    assert.deepEqual(errors, []);
  });
});
