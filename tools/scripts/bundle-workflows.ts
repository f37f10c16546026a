/**
 * Writes the workflow bundle to a file at image build time (`tsx tools/scripts/bundle-workflows.ts OUT`), so
 * production workers load it (WORKFLOW_BUNDLE_PATH) instead of running webpack at every start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflows } from '../../worker/create-worker';

async function main(): Promise<void> {
  const out = process.argv[2];
  if (!out) throw new Error('usage: bundle-workflows OUT_FILE');
  const { code } = await bundleWorkflows();
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, code);
  process.stdout.write(`workflow bundle written to ${out} (${code.length} bytes)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
