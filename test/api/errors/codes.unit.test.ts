/**
 * The error codes in code and in docs/api.md are one set: every code of api/errors/codes.ts is a
 * row of the "Errors" table with the same status and type, every code in the table is in the
 * list, and every code the product code throws (a `code: '...'` option or a code argument of an
 * error class) is in the list too, so a new code cannot ship undocumented.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ERROR_CODES, isErrorCode } from '../../../api/errors/codes';

const ROOT = path.resolve(__dirname, '../../..');

/** The "Errors" table of docs/api.md: one entry per code, with the row's status and type. */
function documentedCodes(): Map<string, Array<{ status: number; type: string }>> {
  const doc = readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Errors'), doc.indexOf('\n## Limits'));
  const rows = new Map<string, Array<{ status: number; type: string }>>();
  for (const line of section.split('\n')) {
    const cells = /^\| (\d{3}) \| `([a-z_]+)` \| ([^|]+) \|/.exec(line);
    if (!cells) continue;
    for (const [, code] of cells[3].matchAll(/`([a-z_]+)`/g)) {
      const list = rows.get(code) ?? [];
      list.push({ status: Number(cells[1]), type: cells[2] });
      rows.set(code, list);
    }
  }
  return rows;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return full.endsWith('.ts') ? [full] : [];
  });
}

/** Codes thrown by product code: `code: 'x'` options, a code argument, the link refusals. */
function thrownCodes(): Set<string> {
  const codes = new Set<string>();
  for (const dir of ['api', 'domain', 'store', 'lib']) {
    for (const file of sourceFiles(path.join(ROOT, dir))) {
      const text = readFileSync(file, 'utf8');
      for (const [, code] of text.matchAll(/\bcode: '([a-z_]+)'/g))
        if (code !== 'custom') codes.add(code); // zod's issue code
      const classArg =
        /new (?:NotFoundError|AuthenticationError|RateLimitError|LinkRefusedError)\([^;]*?'([a-z]+(?:_[a-z]+)+)'\s*,?\s*\)/g;
      for (const [, code] of text.matchAll(classArg)) codes.add(code);
      for (const [, code] of text.matchAll(/\['[a-z]+', '([a-z]+(?:_[a-z]+)+)'\]/g))
        codes.add(code);
    }
  }
  const refusals = readFileSync(path.join(ROOT, 'api/routes/link-refused.ts'), 'utf8');
  const union = /export type LinkRefusal = ([^;]+);/.exec(refusals)![1];
  for (const [, code] of union.matchAll(/'([a-z_]+)'/g)) codes.add(code);
  return codes;
}

describe('error codes: one list, documented', () => {
  const documented = documentedCodes();

  it('documents every code of the list with its status and type', () => {
    for (const [code, answer] of Object.entries(ERROR_CODES)) {
      const rows = documented.get(code);
      assert.ok(rows, `docs/api.md "Errors" has no row for \`${code}\``);
      assert.ok(
        rows.some((row) => row.status === answer.status && row.type === answer.type),
        `docs/api.md gives \`${code}\` as ${JSON.stringify(rows)}, the code list as ${answer.status} ${answer.type}`,
      );
    }
  });

  it('lists every documented code', () => {
    assert.ok(documented.size > 20, `only ${documented.size} codes read from docs/api.md`);
    for (const code of documented.keys())
      assert.ok(
        isErrorCode(code),
        `docs/api.md documents \`${code}\`, api/errors/codes.ts lacks it`,
      );
  });

  it('lists every code the product code throws', () => {
    const thrown = thrownCodes();
    assert.ok(thrown.size > 20, `only ${thrown.size} thrown codes found: the scan is broken`);
    for (const code of thrown)
      assert.ok(isErrorCode(code), `\`${code}\` is thrown but not in api/errors/codes.ts`);
  });
});
