/**
 * The patch registry (workflows/patches.ts) is the only way workflow code versions itself: no
 * module of workflows/ calls patched() or deprecatePatch() directly, every registered patch is
 * used in the stage it is registered in, and no call names an unregistered id.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PATCHES } from '../../workflows/patches';

const WORKFLOWS = path.join(__dirname, '..', '..', 'workflows');
const sources = fs
  .readdirSync(WORKFLOWS)
  .filter((f) => f.endsWith('.ts') && f !== 'patches.ts')
  .map((f) => ({ file: f, text: fs.readFileSync(path.join(WORKFLOWS, f), 'utf8') }));

describe('workflow patches go through the registry (workflows/patches.ts)', () => {
  it('no workflow module calls patched() or deprecatePatch() itself', () => {
    const direct = sources.filter((s) => /\b(patched|deprecatePatch)\s*\(/.test(s.text));
    assert.deepEqual(
      direct.map((s) => s.file),
      [],
      'use isPatched()/deprecated() of patches.ts',
    );
  });

  it('every registered patch is called in its stage, and every call is registered', () => {
    const calls = sources.flatMap((s) =>
      [...s.text.matchAll(/\b(isPatched|deprecated)\(\s*'([^']+)'\s*\)/g)].map((m) => ({
        stage: m[1] === 'isPatched' ? 'patched' : 'deprecated',
        id: m[2],
      })),
    );
    const registry: Record<string, { since: string; stage: string }> = PATCHES;
    for (const call of calls) {
      assert.ok(registry[call.id], `patch '${call.id}' is not in PATCHES`);
      assert.equal(call.stage, registry[call.id].stage, `patch '${call.id}'`);
    }
    for (const [id, entry] of Object.entries(registry)) {
      assert.match(entry.since, /^\d+\.\d+\.\d+$/, `patch '${id}': since is a release`);
      assert.ok(
        calls.some((c) => c.id === id),
        `patch '${id}' is registered but never called`,
      );
    }
  });
});
