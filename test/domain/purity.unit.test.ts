import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

// The Temporal workflow sandbox imports domain/: no Node built-ins, no packages but zod,
// no ambient non-determinism (no clock, no randomness: a given time may be converted).
const dir = path.join(__dirname, '..', '..', 'domain');
const sources = fs.readdirSync(dir).filter((f) => f.endsWith('.ts'));

function withoutComments(text: string): string {
  return text.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
}

/** The modules a source file imports or re-exports from. */
function importsOf(text: string): string[] {
  const code = withoutComments(text);
  return [
    ...code.matchAll(/^\s*(?:import|export)\s[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gm),
    ...code.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
  ].map(([, s]) => s);
}

describe('domain/ purity', () => {
  it('finds the import statements it checks', () => {
    const found = sources.flatMap((file) =>
      importsOf(fs.readFileSync(path.join(dir, file), 'utf8')),
    );
    assert.ok(found.includes('zod') && found.length >= 10, `only ${found.length} imports found`);
  });

  for (const file of sources) {
    it(`${file} imports only zod and sibling modules and uses no Node globals`, () => {
      const text = fs.readFileSync(path.join(dir, file), 'utf8');
      const code = withoutComments(text);
      for (const s of importsOf(text))
        assert.ok(s === 'zod' || /^\.\/[\w-]+$/.test(s), `${file} imports ${s}`);
      const banned = [
        /\bprocess\./,
        /\bBuffer\b/,
        /\bDate\.now\b/,
        /\bnew Date\(\s*\)/ /* reads the clock; new Date(ms) only converts */,
        /\bMath\.random\b/,
        /\brequire\(/,
        /\bimport\(/,
      ];
      for (const pattern of banned) {
        assert.doesNotMatch(code, pattern, `${file} uses ${pattern}`);
      }
    });
  }
});
