/**
 * Builds the playground page: esbuild bundles src/main.ts and src/style.css, and index.html is
 * filled in with the bundles' content-hashed names, so the assets can be cached forever and the
 * page itself revalidated by its ETag. The image writes the page to a directory at build time
 * (tools/scripts/bundle-playground.ts, PLAYGROUND_BUNDLE_DIR) and the API loads it at start, as
 * workers load their prebuilt workflow bundle; from source (development, tests) the API bundles
 * it in memory on the first request.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Asset {
  body: Buffer;
  type: string;
}

export interface PlaygroundBundle {
  html: string;
  /** Strong ETag of the page (it changes whenever an asset does). */
  etag: string;
  /** Hashed file name (e.g. `app.3f2a9c1d0b.js`) → content. */
  assets: Map<string, Asset>;
}

/** Where the page's sources are: next to this file from source (tsx), or two levels up from dist/playground. */
function sourceDir(): string {
  for (const dir of [__dirname, path.resolve(__dirname, '../../playground')]) {
    if (existsSync(path.join(dir, 'src', 'main.ts'))) return dir;
  }
  throw new Error(`playground sources not found near ${__dirname}`);
}

const hashOf = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

async function bundle(dir: string, entry: string): Promise<Buffer> {
  const { build } = await import('esbuild'); // only where the page is built, never when it is loaded
  const result = await build({
    entryPoints: [path.join(dir, 'src', entry)],
    bundle: true,
    minify: true,
    write: false,
    format: 'iife',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    legalComments: 'none',
    logLevel: 'silent',
  });
  return Buffer.from(result.outputFiles[0].contents);
}

/** Bundles the page (about 100 ms); callers cache the promise. */
export async function buildPlayground(): Promise<PlaygroundBundle> {
  const dir = sourceDir();
  const [js, css] = await Promise.all([bundle(dir, 'main.ts'), bundle(dir, 'style.css')]);
  const assets = new Map<string, Asset>();
  const name = (base: string, ext: string, body: Buffer, type: string) => {
    const file = `${base}.${hashOf(body).slice(0, 12)}.${ext}`;
    assets.set(file, { body, type });
    return file;
  };
  const script = name('app', 'js', js, 'text/javascript; charset=utf-8');
  const style = name('app', 'css', css, 'text/css; charset=utf-8');
  const html = readFileSync(path.join(dir, 'index.html'), 'utf8')
    .replace('{{script}}', `/playground/${script}`)
    .replace('{{style}}', `/playground/${style}`);
  return withEtag(html, assets);
}

const withEtag = (html: string, assets: Map<string, Asset>): PlaygroundBundle => ({
  html,
  etag: `"${hashOf(html).slice(0, 27)}"`,
  assets,
});

/** The page's file in a written bundle; every other file there is an asset named by its hash. */
const PAGE = 'index.html';
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** Writes a built page to `outDir` (image build time). */
export function writePlayground(page: PlaygroundBundle, outDir: string): void {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, PAGE), page.html);
  for (const [name, asset] of page.assets) writeFileSync(path.join(outDir, name), asset.body);
}

/** Loads a page written by writePlayground; throws (the API does not start) when it is missing. */
export function loadPlayground(dir: string): PlaygroundBundle {
  const html = readFileSync(path.join(dir, PAGE), 'utf8');
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (name !== PAGE && type) assets.set(name, { body: readFileSync(path.join(dir, name)), type });
  }
  return withEtag(html, assets);
}
