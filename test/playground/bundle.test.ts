// The playground page built at image build time (tools/scripts/bundle-playground.ts → PLAYGROUND_BUNDLE_DIR):
// the written page loads back byte for byte, an API given the directory serves it without bundling, and
// an API given a directory without a page does not start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildPlayground, loadPlayground, writePlayground } from '../../playground/bundle';
import { startService, type TestService } from '../support/service';

describe('playground: the page built at image build time (PLAYGROUND_BUNDLE_DIR)', function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wrs-playground-'));
  let svc: TestService | undefined;
  after(async () => {
    await svc?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes the page and its hashed assets, and loads them back unchanged', async () => {
    const built = await buildPlayground();
    writePlayground(built, dir);
    const loaded = loadPlayground(dir);
    assert.equal(loaded.html, built.html);
    assert.equal(loaded.etag, built.etag);
    assert.deepEqual([...loaded.assets.keys()].sort(), [...built.assets.keys()].sort());
    for (const [name, asset] of built.assets) assert.deepEqual(loaded.assets.get(name), asset);
  });

  it('is what the API serves when given the directory', async () => {
    // A marker only the written copy has: the API must serve the directory, not bundle the sources.
    const page = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
    fs.writeFileSync(
      path.join(dir, 'index.html'),
      page.replace('</head>', '<!-- prebuilt --></head>'),
    );
    svc = await startService({ worker: false, env: { PLAYGROUND_BUNDLE_DIR: dir } });
    const res = await fetch(`${svc.url}/`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /<!-- prebuilt -->/);
    const script = /src="\/playground\/(app\.[0-9a-f]{12}\.js)"/.exec(page)?.[1];
    assert.ok(script, 'the page names its hashed script');
    const asset = await fetch(`${svc.url}/playground/${script}`);
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.deepEqual(
      Buffer.from(await asset.arrayBuffer()),
      fs.readFileSync(path.join(dir, script)),
    );
  });

  it('keeps the API from starting when the directory holds no page', async () => {
    const empty = fs.mkdtempSync(path.join(dir, 'empty-'));
    await assert.rejects(
      startService({ worker: false, env: { PLAYGROUND_BUNDLE_DIR: empty } }),
      /ENOENT.*index\.html/,
    );
  });
});
