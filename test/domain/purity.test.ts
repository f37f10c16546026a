import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

// The Temporal workflow sandbox imports domain/: no Node built-ins, no packages but zod,
// no ambient non-determinism.
const dir = path.join(__dirname, '..', '..', 'domain');
const sources = fs.readdirSync(dir).filter((f) => f.endsWith('.ts'));

describe('domain/ purity', () => {
  for (const file of sources) {
    it(`${file} imports only zod and sibling modules and uses no Node globals`, () => {
      const text = fs.readFileSync(path.join(dir, file), 'utf8');
      const specifiers = [...text.matchAll(/(?:from|import|require\()\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
      for (const s of specifiers) assert.ok(s === 'zod' || /^\.\/[\w-]+$/.test(s), `${file} imports ${s}`);
      const code = text.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
      for (const banned of [/\bprocess\./, /\bBuffer\b/, /\bDate\.now\b/, /\bnew Date\b/, /\bMath\.random\b/, /\brequire\(/]) {
        assert.doesNotMatch(code, banned, `${file} uses ${banned}`);
      }
    });
  }
});
