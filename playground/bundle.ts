/**
 * Builds the playground page in memory: esbuild bundles src/main.ts and src/style.css once per
 * process (on the first request), and index.html is filled in with the bundles' content-hashed
 * names, so the assets can be cached forever and the page itself revalidated by its ETag.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

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
  return { html, etag: `"${hashOf(html).slice(0, 27)}"`, assets };
}
