// The Dockerfile copies every source directory the image's entry points import (a missing
// `COPY webhooks` once broke every image build), and runs the pinned Node 24 with the prebuilt workflow bundle.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from '../support/deploy';

const ENTRY_POINTS = [
  'api/main.ts',
  'worker/main.ts',
  'cli/wrs.ts',
  'tools/scripts/bundle-workflows.ts',
];

/** Every repository file reachable from `entries` through relative imports. */
function reachableSources(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = entries.map((e) => path.join(REPO, e));
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = fs.readFileSync(file, 'utf8');
    for (const [, spec] of text.matchAll(/(?:from|require\(|import\()\s*'(\.{1,2}\/[^']+)'/g)) {
      const base = path.resolve(path.dirname(file), spec);
      const found = [`${base}.ts`, path.join(base, 'index.ts'), base].find(
        (c) => fs.existsSync(c) && fs.statSync(c).isFile(),
      );
      if (found && found.endsWith('.ts')) queue.push(found);
    }
  }
  return seen;
}

describe('Dockerfile', () => {
  const dockerfile = fs.readFileSync(path.join(REPO, 'Dockerfile'), 'utf8');

  it('copies every source directory the entry points import', () => {
    const copied = new Set(
      [...dockerfile.matchAll(/^COPY (\S+) \.\/\S+$/gm)].map((m) => m[1].replace(/\/$/, '')),
    );
    const needed = new Set(
      [...reachableSources(ENTRY_POINTS)].map((f) => path.relative(REPO, f).split(path.sep)[0]),
    );
    needed.delete('tools'); // only the two build-time bundlers in tools/scripts, copied as files
    assert.ok(copied.has('tools/scripts/bundle-workflows.ts'));
    assert.ok(copied.has('tools/scripts/bundle-playground.ts'));
    assert.deepEqual([...needed].filter((d) => !copied.has(d)).sort(), []);
  });

  it('builds on a pinned Node 24 and points the workers and the API at the prebuilt bundles', () => {
    assert.match(dockerfile, /^ARG NODE_IMAGE=node:24\.\d+\.\d+-\w+-slim$/m);
    assert.match(
      dockerfile,
      /node dist\/tools\/scripts\/bundle-workflows\.js dist\/workflow-bundle\.js/,
    );
    assert.match(dockerfile, /WORKFLOW_BUNDLE_PATH=\/app\/dist\/workflow-bundle\.js/);
    assert.match(
      dockerfile,
      /node dist\/tools\/scripts\/bundle-playground\.js dist\/playground-page/,
    );
    assert.match(dockerfile, /PLAYGROUND_BUNDLE_DIR=\/app\/dist\/playground-page/);
  });
});
