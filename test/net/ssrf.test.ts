/**
 * The SSRF guard (net/ssrf.ts, D19): the address classifier, scheme and address checks (every
 * answer of a name counts), manual redirects checked hop by hop, and connections pinned to the
 * checked address. Only loopback servers are contacted; the private and metadata addresses
 * below are refused before any connection is attempted.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkedAddress, checkedUrl, classifyAddress, guardedGet, UrlRefusedError, type AddressClass } from '../../net/ssrf';

interface Server {
  origin: (host?: string) => string;
  hits: string[];
  close(): Promise<void>;
}

/** A loopback server: /ok answers text, /to?url=... redirects there, /loop/n?stop=k redirects to /loop/n+1 until n = k. */
async function startServer(host = '127.0.0.1'): Promise<Server> {
  const hits: string[] = [];
  let port = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    hits.push(url.pathname);
    if (url.pathname === '/ok') return res.end(`ok from ${req.headers.host}`);
    if (url.pathname === '/to') {
      res.writeHead(302, { location: url.searchParams.get('url')! });
      return res.end();
    }
    const loop = /^\/loop\/(\d+)$/.exec(url.pathname);
    if (loop) {
      const n = Number(loop[1]);
      const stop = Number(url.searchParams.get('stop'));
      if (n >= stop) return res.end(`stopped at ${n}`);
      res.writeHead(301, { location: `/loop/${n + 1}?stop=${stop}` });
      return res.end();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  port = (server.address() as AddressInfo).port;
  return {
    origin: (name = host) => `http://${name}:${port}`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const text = async (res: { body: AsyncIterable<Buffer> }) => {
  const chunks: Buffer[] = [];
  for await (const c of res.body) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
};

describe('SSRF guard (net/ssrf.ts)', function () {
  this.timeout(20_000);

  describe('classifyAddress', () => {
    const table: Record<AddressClass, string[]> = {
      loopback: ['127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1'],
      private: ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1', 'fc00::1', 'fd12:3456::1', 'fec0::1', '64:ff9b::a00:1', '2002:c0a8:0101::1'],
      link_local: ['169.254.0.1', '169.254.255.255', 'fe80::1', 'fe80::1%eth0', 'febf::1'],
      metadata: ['169.254.169.254', 'fd00:ec2::254', '::ffff:169.254.169.254', '100.100.100.200'],
      unspecified: ['0.0.0.0', '0.1.2.3', '::'],
      multicast: ['224.0.0.1', '239.255.255.250', 'ff02::1', 'ff05::2'],
      reserved: ['240.0.0.1', '255.255.255.255', '192.0.2.1', '198.51.100.7', '203.0.113.9', '198.18.0.1', '2001:db8::1', '2001::1', 'not-an-ip'],
      public: ['1.1.1.1', '8.8.8.8', '172.15.255.255', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8'],
    };
    for (const [cls, addresses] of Object.entries(table)) {
      it(`classifies ${cls} addresses`, () => {
        for (const address of addresses) assert.equal(classifyAddress(address), cls, address);
      });
    }
  });

  describe('checks before connecting', () => {
    const opts = { allowHttp: false, allowPrivate: false };

    it('allows https only (http when configured); refuses other schemes and non-URLs', () => {
      assert.equal(checkedUrl('https://example.com/a.png', opts).hostname, 'example.com');
      assert.throws(() => checkedUrl('http://example.com/a.png', opts), /http:\/\/ URLs are refused/);
      assert.equal(checkedUrl('http://example.com/a.png', { allowHttp: true }).protocol, 'http:');
      for (const bad of ['ftp://example.com/x', 'file:///etc/passwd', 'gopher://x', 'data:text/plain,hi', 'not a url']) {
        assert.throws(() => checkedUrl(bad, { allowHttp: true }), UrlRefusedError, bad);
      }
    });

    it('refuses literal private, loopback, link-local and metadata hosts, in every spelling a URL parser accepts', async () => {
      const refused: Array<[string, RegExp]> = [
        ['https://127.0.0.1/', /loopback/],
        ['https://2130706433/', /127\.0\.0\.1, a loopback/], // decimal form of 127.0.0.1
        ['https://0x7f.1/', /loopback/],
        ['https://[::1]/', /loopback/],
        ['https://[::ffff:127.0.0.1]/', /loopback/],
        ['https://10.1.2.3/', /private/],
        ['https://192.168.0.10:8443/', /private/],
        ['https://169.254.169.254/latest/meta-data/', /metadata/],
        ['https://[fd00:ec2::254]/', /metadata/],
        ['https://169.254.10.10/', /link-local/],
        ['https://0.0.0.0/', /unspecified/],
      ];
      for (const [url, why] of refused) {
        await assert.rejects(checkedAddress(new URL(url), opts), (err: Error) => err instanceof UrlRefusedError && why.test(err.message), url);
      }
    });

    it('resolves names and refuses them when any answer is not public (DNS may mix answers)', async () => {
      const answers: Record<string, Array<{ address: string; family: number }>> = {
        'public.test': [{ address: '93.184.216.34', family: 4 }],
        'mixed.test': [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.5', family: 4 }],
        'internal.test': [{ address: '192.168.7.7', family: 4 }],
        'metadata.test': [{ address: '169.254.169.254', family: 4 }],
        'v6.test': [{ address: 'fe80::1', family: 6 }],
      };
      const resolve = async (host: string) => answers[host] ?? [];
      assert.deepEqual(await checkedAddress(new URL('https://public.test/'), { ...opts, resolve }), { address: '93.184.216.34', family: 4 });
      await assert.rejects(checkedAddress(new URL('https://mixed.test/'), { ...opts, resolve }), /mixed\.test resolves to 10\.0\.0\.5, a private network address/);
      await assert.rejects(checkedAddress(new URL('https://internal.test/'), { ...opts, resolve }), /private/);
      await assert.rejects(checkedAddress(new URL('https://metadata.test/'), { ...opts, resolve }), /metadata/);
      await assert.rejects(checkedAddress(new URL('https://v6.test/'), { ...opts, resolve }), /link-local/);
      await assert.rejects(checkedAddress(new URL('https://nowhere.test/'), { ...opts, resolve }), /cannot resolve/);
      // The system resolver: localhost is loopback.
      await assert.rejects(checkedAddress(new URL('https://localhost/'), opts), /localhost resolves to .*loopback/);
      // Configuration may allow private addresses, for every host or for listed ones.
      assert.equal((await checkedAddress(new URL('https://internal.test/'), { ...opts, allowPrivate: true, resolve })).address, '192.168.7.7');
      assert.equal((await checkedAddress(new URL('https://internal.test/'), { ...opts, allowedHosts: ['internal.test'], resolve })).address, '192.168.7.7');
    });
  });

  describe('guardedGet', () => {
    let server: Server;
    let second: Server;
    before(async () => {
      [server, second] = await Promise.all([startServer('127.0.0.1'), startServer('127.0.0.2')]);
    });
    after(async () => {
      await server?.close();
      await second?.close();
    });
    const signal = () => AbortSignal.timeout(5_000);

    it('refuses a loopback URL without connecting to it', async () => {
      const before = server.hits.length;
      await assert.rejects(guardedGet(`${server.origin()}/ok`, { allowHttp: true, allowPrivate: false, signal: signal() }), /loopback/);
      assert.equal(server.hits.length, before);
    });

    it('checks every redirect: an allowed host redirecting to loopback is refused before the second connection', async () => {
      const target = `${server.origin()}/ok`;
      const before = server.hits.length;
      await assert.rejects(
        guardedGet(`${second.origin()}/to?url=${encodeURIComponent(target)}`, { allowHttp: true, allowPrivate: false, allowedHosts: ['127.0.0.2'], signal: signal() }),
        (err: Error) => err instanceof UrlRefusedError && /127\.0\.0\.1, a loopback address/.test(err.message),
      );
      assert.deepEqual(second.hits.slice(-1), ['/to']);
      assert.equal(server.hits.length, before, 'the loopback target was never contacted');
      // A redirect may not switch to a refused scheme either.
      await assert.rejects(
        guardedGet(`${second.origin()}/to?url=${encodeURIComponent('file:///etc/passwd')}`, { allowHttp: true, allowPrivate: false, allowedHosts: ['127.0.0.2'], signal: signal() }),
        /file:\/\/ URLs are refused/,
      );
    });

    it('follows up to 5 redirects (relative ones included) and refuses the 6th', async () => {
      const ok = await guardedGet(`${server.origin()}/to?url=${encodeURIComponent('/ok')}`, { allowHttp: true, allowPrivate: true, signal: signal() });
      assert.equal(ok.status, 200);
      assert.equal(ok.url.pathname, '/ok');
      assert.equal(await text(ok), `ok from 127.0.0.1:${new URL(server.origin()).port}`);
      const five = await guardedGet(`${server.origin()}/loop/0?stop=5`, { allowHttp: true, allowPrivate: true, signal: signal() });
      assert.equal(five.status, 200);
      assert.equal(await text(five), 'stopped at 5');
      await assert.rejects(
        guardedGet(`${server.origin()}/loop/0?stop=6`, { allowHttp: true, allowPrivate: true, signal: signal() }),
        (err: Error) => err instanceof UrlRefusedError && /more than 5 redirects/.test(err.message),
      );
    });

    it('connects to the address it checked, not to a fresh DNS answer (no rebinding)', async () => {
      // `pinned.test` exists only in this resolver: the connection can only have used the checked address.
      let calls = 0;
      const resolve = async () => {
        calls++;
        return [{ address: '127.0.0.1', family: 4 }];
      };
      const res = await guardedGet(`http://pinned.test:${new URL(server.origin()).port}/ok`, { allowHttp: true, allowPrivate: true, resolve, signal: signal() });
      assert.equal(res.status, 200);
      assert.match(await text(res), /^ok from pinned\.test:/); // the Host header keeps the name
      assert.equal(calls, 1);
    });
  });
});
