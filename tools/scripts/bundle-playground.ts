/**
 * Writes the playground page to a directory at image build time (`tsx tools/scripts/bundle-playground.ts
 * OUT_DIR`), so the API loads it (PLAYGROUND_BUNDLE_DIR) instead of running esbuild on its first request.
 */
import { buildPlayground, writePlayground } from '../../playground/bundle';

async function main(): Promise<void> {
  const out = process.argv[2];
  if (!out) throw new Error('usage: bundle-playground OUT_DIR');
  const page = await buildPlayground();
  writePlayground(page, out);
  process.stdout.write(`playground page written to ${out} (${page.assets.size} assets)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
