/**
 * HTTPS (D21): with TLS_CERT_FILE and TLS_KEY_FILE the API itself serves HTTPS
 * (HTTP/1.1, SSE included). A self-signed certificate made with openssl stands in for a real one.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { newAccount } from '../support/accounts';
import { greetingWorkflow } from '../support/fixtures';
import { startService, type TestService } from '../support/service';

interface HttpsAnswer {
  status: number;
  httpVersion: string;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One HTTPS request trusting only `ca`; resolves when the server has sent the whole body (a stream: up to its close). */
function request(
  url: string,
  ca: Buffer,
  opts: { method?: string; key?: string; body?: unknown } = {},
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = https.request(url, {
      method: opts.method ?? 'GET',
      ca,
      headers: {
        ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
        ...(payload
          ? {
              'content-type': 'application/json',
              'content-length': String(Buffer.byteLength(payload)),
            }
          : {}),
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          httpVersion: res.httpVersion,
          headers: res.headers,
          text,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

describe('HTTPS (D21)', function () {
  this.timeout(120_000);
  let dir: string;
  let ca: Buffer;
  let svc: TestService;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'wrs-tls-'));
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        '/CN=localhost',
        '-days',
        '1',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    ca = readFileSync(cert); // self-signed: the certificate is its own authority
    svc = await startService({ env: { TLS_CERT_FILE: cert, TLS_KEY_FILE: key } });
  });
  after(async () => {
    await svc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves an async start and a streaming start over HTTPS (HTTP/1.1), and refuses an untrusted client', async () => {
    assert.match(svc.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const { key } = await newAccount(svc.store.collections);
    const published = await request(`${svc.url}/api/v1/workflows`, ca, {
      method: 'POST',
      key,
      body: greetingWorkflow('greet'),
    });
    assert.equal(published.status, 201, published.text);

    const started = await request(`${svc.url}/api/v1/responses`, ca, {
      method: 'POST',
      key,
      body: { workflowId: 'greet', inputs: { name: 'TLS' } },
    });
    assert.equal(started.status, 202, started.text);
    assert.equal(started.httpVersion, '1.1');
    const runId = JSON.parse(started.text).run_id;

    const stream = await request(`${svc.url}/api/v1/responses`, ca, {
      method: 'POST',
      key,
      body: { workflowId: 'greet', stream: true, inputs: { name: 'SSE' } },
    });
    assert.equal(stream.status, 200);
    assert.equal(stream.httpVersion, '1.1');
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    const data = stream.text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    assert.equal(data.at(-1), '[DONE]', stream.text);
    const seen = data.slice(0, -1).map((d) => JSON.parse(d));
    assert.equal(seen[0].type, 'response.created');
    assert.equal(seen.at(-1).type, 'response.completed', stream.text);

    // The async run, read over HTTPS too.
    let run: any;
    for (let i = 0; i < 100 && run?.status !== 'completed'; i++) {
      run = JSON.parse((await request(`${svc.url}/api/v1/runs/${runId}`, ca, { key })).text);
      if (run.status !== 'completed') await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(run.output.greeting[0].parts[0].text, 'Hello, TLS!');

    // A client that does not trust the certificate gets no answer, and plain HTTP is not served.
    await assert.rejects(
      () => request(`${svc.url}/api/v1/runs/${runId}`, Buffer.alloc(0), { key }),
      /self[- ]signed|certificate/i,
    );
    const plain = svc.url.replace('https:', 'http:');
    await assert.rejects(
      () =>
        new Promise((resolve, reject) => {
          http.get(`${plain}/healthz`, (res) => resolve(res.statusCode)).on('error', reject);
        }),
    );
  });
});
