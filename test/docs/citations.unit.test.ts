/**
 * The repository explains itself: a comment, test title or document cites a product decision as
 * D.. (docs/decisions.md), never a number of an issue tracker that is not in the repository, and
 * every D.. it cites exists. Reads the files git tracks; the benchmark's dated session records
 * (tools/bench/RESULTS.md, FINDINGS.md) are history and left as written.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const TEXT = /\.(ts|md|mjs|cjs|yml|yaml|toml|sh|py)$|(^|\/)Dockerfile$/;
const RECORDS = new Set(['tools/bench/RESULTS.md', 'tools/bench/FINDINGS.md']);

function trackedTextFiles(): string[] {
  return execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => TEXT.test(f) && !RECORDS.has(f) && !f.startsWith('test/workflows/histories/'));
}

describe('citations', () => {
  const files = trackedTextFiles().map((f) => {
    let text = '';
    try {
      text = readFileSync(path.join(ROOT, f), 'utf8');
    } catch {
      // listed by git but not on disk (deleted in the working tree)
    }
    return { f, text };
  });

  it('names no issue tracker numbers', () => {
    assert.ok(files.length > 100, `only ${files.length} files read`);
    const found = files.flatMap(({ f, text }) =>
      text
        .split('\n')
        .flatMap((line, i) =>
          /\b[Ii]ssues? [0-9]+\b(?! days)/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
    assert.deepEqual(found, []);
  });

  it('cites only decisions that docs/decisions.md holds', () => {
    const decisions = readFileSync(path.join(ROOT, 'docs/decisions.md'), 'utf8');
    const known = new Set([...decisions.matchAll(/^### (D\d+)\b/gm)].map(([, d]) => d));
    assert.ok(known.size > 30, `only ${known.size} decisions read`);
    const unknown = files.flatMap(({ f, text }) =>
      [...text.matchAll(/\bD(\d{1,2})\b/g)]
        .map(([d]) => d)
        .filter((d) => !known.has(d))
        .map((d) => `${f}: ${d}`),
    );
    assert.deepEqual([...new Set(unknown)], []);
  });
});
