/**
 * The SSRF guard (lib/net/ssrf.ts, D19): the address classifier, scheme and address checks (every
 * answer of a name counts), manual redirects checked hop by hop, connections pinned to the
 * checked address, and guardedFetch's redirect rules for other methods (those of fetch: 303
 * and a POST's 301/302 become GETs, 307/308 keep method and body, credentials stay with their
 * origin), and origins trusted by configuration (exact match, their own hops only). Only
 * loopback servers are contacted; the private and metadata addresses below are
 * refused before any connection is attempted.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import {
  checkedAddress,
  checkedUrl,
  classifyAddress,
  guardedFetch,
  guardedGet,
  UrlRefusedError,
  type AddressClass,
} from '../../../lib/net/ssrf';
import { deadline } from '../../../lib/net/deadline';

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

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface EchoServer {
  origin: string;
  seen: Seen[];
  close(): Promise<void>;
}

/** A loopback server recording every request: /r/<status>?to=<url> redirects with that status, anything else answers 200. */
async function startEcho(host = '127.0.0.1'): Promise<EchoServer> {
  const seen: Seen[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    seen.push({
      method: req.method ?? '',
      path: url.pathname,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    });
    const redirect = /^\/r\/(\d{3})$/.exec(url.pathname);
    if (redirect) {
      res.writeHead(Number(redirect[1]), { location: url.searchParams.get('to')! });
      return res.end('moved');
    }
    res.end('done');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    origin: `http://${host}:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const text = async (res: { body: AsyncIterable<Buffer> }) => {
  const chunks: Buffer[] = [];
  for await (const c of res.body) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
};

describe('SSRF guard (lib/net/ssrf.ts)', function () {
  this.timeout(20_000);

  describe('classifyAddress', () => {
    const table: Record<AddressClass, string[]> = {
      loopback: [
        '127.0.0.1',
        '127.255.255.254',
        '::1',
        '::ffff:127.0.0.1',
        '::ffff:7f00:1',
        '::ffff:0:7f00:1', // IPv4-translated (SIIT): before, public
      ],
      private: [
        '10.0.0.1',
        '10.255.255.255',
        '172.16.0.1',
        '172.31.255.255',
        '192.168.1.1',
        '100.64.0.1',
        'fc00::1',
        'fd12:3456::1',
        'fec0::1',
        '64:ff9b::a00:1',
        '64:ff9b:1::7f00:1', // a local NAT64 prefix: whatever it carries
        '64:ff9b:1:ffff::808:808',
        '2002:c0a8:0101::1',
      ],
      link_local: ['169.254.0.1', '169.254.255.255', 'fe80::1', 'fe80::1%eth0', 'febf::1'],
      metadata: [
        '169.254.169.254',
        'fd00:ec2::254',
        '::ffff:169.254.169.254',
        '::ffff:0:169.254.169.254',
        '100.100.100.200',
        '168.63.129.16', // Azure's WireServer: before, public
      ],
      unspecified: ['0.0.0.0', '0.1.2.3', '::'],
      multicast: ['224.0.0.1', '239.255.255.250', 'ff02::1', 'ff05::2'],
      reserved: [
        '240.0.0.1',
        '255.255.255.255',
        '192.0.2.1',
        '198.51.100.7',
        '203.0.113.9',
        '198.18.0.1',
        '2001:db8::1',
        '2001::1',
        'not-an-ip',
      ],
      public: [
        '1.1.1.1',
        '8.8.8.8',
        '172.15.255.255',
        '172.32.0.1',
        '192.169.0.1',
        '100.128.0.1',
        '2606:4700:4700::1111',
        '2a00:1450:4001::200e',
        '::ffff:8.8.8.8',
      ],
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
      assert.throws(
        () => checkedUrl('http://example.com/a.png', opts),
        /http:\/\/ URLs are refused/,
      );
      assert.equal(checkedUrl('http://example.com/a.png', { allowHttp: true }).protocol, 'http:');
      for (const bad of [
        'ftp://example.com/x',
        'file:///etc/passwd',
        'gopher://x',
        'data:text/plain,hi',
        'not a url',
      ]) {
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
        await assert.rejects(
          checkedAddress(new URL(url), opts),
          (err: Error) => err instanceof UrlRefusedError && why.test(err.message),
          url,
        );
      }
    });

    it('resolves names and refuses them when any answer is not public (DNS may mix answers)', async () => {
      const answers: Record<string, Array<{ address: string; family: number }>> = {
        'public.test': [{ address: '93.184.216.34', family: 4 }],
        'mixed.test': [
          { address: '93.184.216.34', family: 4 },
          { address: '10.0.0.5', family: 4 },
        ],
        'internal.test': [{ address: '192.168.7.7', family: 4 }],
        'metadata.test': [{ address: '169.254.169.254', family: 4 }],
        'v6.test': [{ address: 'fe80::1', family: 6 }],
      };
      const resolve = async (host: string) => answers[host] ?? [];
      assert.deepEqual(
        await checkedAddress(new URL('https://public.test/'), { ...opts, resolve }),
        { address: '93.184.216.34', family: 4 },
      );
      await assert.rejects(
        checkedAddress(new URL('https://mixed.test/'), { ...opts, resolve }),
        /mixed\.test resolves to 10\.0\.0\.5, a private network address/,
      );
      await assert.rejects(
        checkedAddress(new URL('https://internal.test/'), { ...opts, resolve }),
        /private/,
      );
      await assert.rejects(
        checkedAddress(new URL('https://metadata.test/'), { ...opts, resolve }),
        /metadata/,
      );
      await assert.rejects(
        checkedAddress(new URL('https://v6.test/'), { ...opts, resolve }),
        /link-local/,
      );
      await assert.rejects(
        checkedAddress(new URL('https://nowhere.test/'), { ...opts, resolve }),
        /cannot resolve/,
      );
      // The system resolver: localhost is loopback.
      await assert.rejects(
        checkedAddress(new URL('https://localhost/'), opts),
        /localhost resolves to .*loopback/,
      );
      // Configuration may allow private addresses, for every host or for listed ones.
      assert.equal(
        (
          await checkedAddress(new URL('https://internal.test/'), {
            ...opts,
            allowPrivate: true,
            resolve,
          })
        ).address,
        '192.168.7.7',
      );
      assert.equal(
        (
          await checkedAddress(new URL('https://internal.test/'), {
            ...opts,
            allowedHosts: ['internal.test'],
            resolve,
          })
        ).address,
        '192.168.7.7',
      );
    });

    it('keeps the request’s deadline while a name does not resolve: a DNS server that never answers does not hold it', async () => {
      const never = () => new Promise<never>(() => {});
      // Before, the lookup was awaited without the signal: this waited for good.
      await assert.rejects(
        guardedFetch('https://silent.test/', {
          ...opts,
          resolve: never,
          signal: deadline(100).signal, // AbortSignal.timeout's timer can be collected on Node 20 (deadline.ts)
        }),
        { name: 'TimeoutError' },
      );
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
      await assert.rejects(
        guardedGet(`${server.origin()}/ok`, {
          allowHttp: true,
          allowPrivate: false,
          signal: signal(),
        }),
        /loopback/,
      );
      assert.equal(server.hits.length, before);
    });

    it('refuses a redirect to a Location that is no URL (before: a TypeError, which an http_request retried)', async () => {
      await assert.rejects(
        guardedGet(`${second.origin()}/to?url=${encodeURIComponent('http://[')}`, {
          allowHttp: true,
          allowPrivate: false,
          allowedHosts: ['127.0.0.2'],
          signal: signal(),
        }),
        (err: Error) =>
          err instanceof UrlRefusedError && /'http:\/\/\[' is not a URL/.test(err.message),
      );
    });

    it('checks every redirect: an allowed host redirecting to loopback is refused before the second connection', async () => {
      const target = `${server.origin()}/ok`;
      const before = server.hits.length;
      await assert.rejects(
        guardedGet(`${second.origin()}/to?url=${encodeURIComponent(target)}`, {
          allowHttp: true,
          allowPrivate: false,
          allowedHosts: ['127.0.0.2'],
          signal: signal(),
        }),
        (err: Error) =>
          err instanceof UrlRefusedError && /127\.0\.0\.1, a loopback address/.test(err.message),
      );
      assert.deepEqual(second.hits.slice(-1), ['/to']);
      assert.equal(server.hits.length, before, 'the loopback target was never contacted');
      // A redirect may not switch to a refused scheme either.
      await assert.rejects(
        guardedGet(`${second.origin()}/to?url=${encodeURIComponent('file:///etc/passwd')}`, {
          allowHttp: true,
          allowPrivate: false,
          allowedHosts: ['127.0.0.2'],
          signal: signal(),
        }),
        /file:\/\/ URLs are refused/,
      );
    });

    it('trusts a configured origin exactly (scheme, host and port), and only for its own hops', async () => {
      const trusted = server.origin(); // http://127.0.0.1:<port>, as a provider's base URL in configuration
      const opts = { allowHttp: false, allowPrivate: false, trustedOrigins: [trusted] };
      const ok = await guardedGet(`${trusted}/ok`, { ...opts, signal: signal() });
      assert.equal(ok.status, 200, 'neither http:// nor loopback is refused on the trusted origin');
      await text(ok);
      const before = server.hits.length;
      // The same host on another port, the same port under another scheme, another loopback host: checked as any URL.
      const port = Number(new URL(trusted).port);
      await assert.rejects(
        guardedGet(`${second.origin()}/ok`, { ...opts, allowHttp: true, signal: signal() }),
        /127\.0\.0\.2, a loopback address/,
      );
      await assert.rejects(
        guardedGet(`http://127.0.0.1:${port === 65535 ? port - 1 : port + 1}/ok`, {
          ...opts,
          allowHttp: true,
          signal: signal(),
        }),
        /127\.0\.0\.1, a loopback address/,
      );
      await assert.rejects(
        guardedGet(`https://127.0.0.1:${port}/ok`, { ...opts, signal: signal() }),
        /127\.0\.0\.1, a loopback address/,
      );
      // A redirect from the trusted origin to anywhere else is checked before connecting.
      const hits = second.hits.length;
      await assert.rejects(
        guardedGet(`${trusted}/to?url=${encodeURIComponent(`${second.origin()}/ok`)}`, {
          ...opts,
          allowHttp: true,
          signal: signal(),
        }),
        (err: Error) =>
          err instanceof UrlRefusedError && /127\.0\.0\.2, a loopback address/.test(err.message),
      );
      assert.equal(second.hits.length, hits, 'the redirect target was never contacted');
      assert.deepEqual(server.hits.slice(before), ['/to'], 'only the trusted hop was fetched');
      // Schemes without an origin never match, whatever the list says.
      assert.throws(
        () => checkedUrl('file:///etc/passwd', { allowHttp: true, trustedOrigins: ['null'] }),
        /file:\/\/ URLs are refused/,
      );
    });

    it('follows up to 5 redirects (relative ones included) and refuses the 6th', async () => {
      const ok = await guardedGet(`${server.origin()}/to?url=${encodeURIComponent('/ok')}`, {
        allowHttp: true,
        allowPrivate: true,
        signal: signal(),
      });
      assert.equal(ok.status, 200);
      assert.equal(ok.url.pathname, '/ok');
      assert.equal(await text(ok), `ok from 127.0.0.1:${new URL(server.origin()).port}`);
      const five = await guardedGet(`${server.origin()}/loop/0?stop=5`, {
        allowHttp: true,
        allowPrivate: true,
        signal: signal(),
      });
      assert.equal(five.status, 200);
      assert.equal(await text(five), 'stopped at 5');
      await assert.rejects(
        guardedGet(`${server.origin()}/loop/0?stop=6`, {
          allowHttp: true,
          allowPrivate: true,
          signal: signal(),
        }),
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
      const res = await guardedGet(`http://pinned.test:${new URL(server.origin()).port}/ok`, {
        allowHttp: true,
        allowPrivate: true,
        resolve,
        signal: signal(),
      });
      assert.equal(res.status, 200);
      assert.match(await text(res), /^ok from pinned\.test:/); // the Host header keeps the name
      assert.equal(calls, 1);
    });
  });

  describe('guardedFetch (any method)', () => {
    let a: EchoServer;
    let b: EchoServer;
    before(async () => {
      [a, b] = await Promise.all([startEcho('127.0.0.1'), startEcho('127.0.0.2')]);
    });
    after(async () => {
      await a?.close();
      await b?.close();
    });
    const open = { allowHttp: true, allowPrivate: true };
    const signal = () => AbortSignal.timeout(5_000);
    /** Requests `a` answered since `from`, as method path body. */
    const since = (server: EchoServer, from: number) =>
      server.seen.slice(from).map((r) => `${r.method} ${r.path} ${r.body}`.trim());

    it('keeps method, body and body headers on 307 and 308', async () => {
      for (const [status, method] of [
        [307, 'POST'],
        [308, 'PUT'],
        [307, 'PATCH'],
        [308, 'DELETE'],
      ] as const) {
        const from = a.seen.length;
        const res = await guardedFetch(`${a.origin}/r/${status}?to=/final`, {
          ...open,
          method,
          headers: { 'Content-Type': 'application/json' },
          body: '{"n":1}',
          signal: signal(),
        });
        assert.equal(res.status, 200);
        assert.equal(await text(res), 'done');
        assert.deepEqual(
          since(a, from),
          [`${method} /r/${status} {"n":1}`, `${method} /final {"n":1}`],
          `${status} ${method}`,
        );
        const last = a.seen.at(-1)!;
        assert.equal(last.headers['content-type'], 'application/json');
        assert.equal(last.headers['content-length'], '7');
      }
    });

    it('continues as a GET without body after 303, and after 301/302 of a POST; other methods keep theirs on 301/302', async () => {
      const cases: Array<[number, string, string]> = [
        [303, 'POST', 'GET'],
        [303, 'PUT', 'GET'],
        [303, 'DELETE', 'GET'],
        [301, 'POST', 'GET'],
        [302, 'POST', 'GET'],
        [301, 'PUT', 'PUT'],
        [302, 'PATCH', 'PATCH'],
      ];
      for (const [status, method, then] of cases) {
        const from = a.seen.length;
        const res = await guardedFetch(`${a.origin}/r/${status}?to=/final`, {
          ...open,
          method,
          headers: { 'content-type': 'text/plain', 'x-keep': 'yes' },
          body: 'payload',
          signal: signal(),
        });
        assert.equal(res.status, 200);
        res.body.resume();
        const last = a.seen.at(-1)!;
        assert.deepEqual(
          since(a, from),
          [
            `${method} /r/${status} payload`,
            then === 'GET' ? 'GET /final' : `${then} /final payload`,
          ],
          `${status} ${method}`,
        );
        assert.equal(last.headers['x-keep'], 'yes', 'other headers follow the redirect');
        if (then === 'GET') {
          assert.equal(
            last.headers['content-type'],
            undefined,
            'the body headers went with the body',
          );
          assert.equal(last.headers['content-length'], undefined);
        }
      }
    });

    it('drops Authorization, Cookie and Proxy-Authorization on a redirect to another origin, keeps them on the same origin', async () => {
      const credentials = {
        Authorization: 'Bearer secret',
        Cookie: 'session=1',
        'Proxy-Authorization': 'Basic eA==',
        'X-Trace': 't1',
      };
      const fromA = a.seen.length;
      const same = await guardedFetch(`${a.origin}/r/302?to=/final`, {
        ...open,
        headers: credentials,
        signal: signal(),
      });
      same.body.resume();
      assert.equal(a.seen.length - fromA, 2);
      for (const r of a.seen.slice(fromA)) {
        assert.equal(r.headers.authorization, 'Bearer secret', r.path);
        assert.equal(r.headers.cookie, 'session=1', r.path);
      }
      // Another host, and the same host on another port (an origin is scheme, host and port).
      const other = await startEcho('127.0.0.1');
      try {
        for (const target of [b, other]) {
          const from = target.seen.length;
          const res = await guardedFetch(
            `${a.origin}/r/307?to=${encodeURIComponent(`${target.origin}/final`)}`,
            {
              ...open,
              method: 'POST',
              headers: credentials,
              body: 'x',
              signal: signal(),
            },
          );
          assert.equal(res.status, 200);
          res.body.resume();
          assert.equal(
            a.seen.at(-1)!.headers.authorization,
            'Bearer secret',
            'the first origin received them',
          );
          const arrived = target.seen.slice(from);
          assert.equal(arrived.length, 1);
          assert.equal(arrived[0].headers.authorization, undefined, target.origin);
          assert.equal(arrived[0].headers.cookie, undefined, target.origin);
          assert.equal(arrived[0].headers['proxy-authorization'], undefined, target.origin);
          assert.equal(arrived[0].headers['x-trace'], 't1');
          assert.equal(arrived[0].body, 'x', '307 kept the body');
        }
      } finally {
        await other.close();
      }
    });

    it('checks every hop whatever the method: a POST redirected to loopback by an allowed host is refused before connecting', async () => {
      const fromA = a.seen.length;
      const fromB = b.seen.length;
      await assert.rejects(
        guardedFetch(`${b.origin}/r/307?to=${encodeURIComponent(`${a.origin}/final`)}`, {
          allowHttp: true,
          allowPrivate: false,
          allowedHosts: ['127.0.0.2'],
          method: 'POST',
          body: 'x',
          signal: signal(),
        }),
        (err: Error) =>
          err instanceof UrlRefusedError && /127\.0\.0\.1, a loopback address/.test(err.message),
      );
      assert.deepEqual(since(b, fromB), ['POST /r/307 x']);
      assert.equal(a.seen.length, fromA, 'the loopback target was never contacted');
      await assert.rejects(
        guardedFetch(`${a.origin}/final`, {
          allowHttp: true,
          allowPrivate: false,
          method: 'DELETE',
          signal: signal(),
        }),
        UrlRefusedError,
      );
      assert.equal(a.seen.length, fromA);
    });

    it('hands a redirect back with maxRedirects 0 and counts hops against maxRedirects', async () => {
      const res = await guardedFetch(`${a.origin}/r/302?to=/final`, {
        ...open,
        maxRedirects: 0,
        signal: signal(),
      });
      assert.equal(res.status, 302);
      assert.equal(res.headers.location, '/final');
      assert.equal(await text(res), 'moved');
      const twice = `${a.origin}/r/302?to=${encodeURIComponent(`/r/302?to=/final`)}`;
      await assert.rejects(
        guardedFetch(twice, { ...open, maxRedirects: 1, signal: signal() }),
        /more than 1 redirects from http:\/\/127\.0\.0\.1:\d+$/,
      );
      const ok = await guardedFetch(twice, { ...open, maxRedirects: 2, signal: signal() });
      assert.equal(ok.status, 200);
      assert.equal(ok.url.pathname, '/final');
      ok.body.resume();
    });

    it("closes a redirect's connection when it follows it: a body that never ends is not read on", async () => {
      let closed!: () => void;
      const redirectClosed = new Promise<void>((resolve) => (closed = resolve));
      const server = http.createServer((req, res) => {
        if (req.url !== '/endless') return res.end('final');
        res.writeHead(302, { location: '/final' });
        const drip = setInterval(() => res.write('x'.repeat(1024)), 10);
        res.on('close', () => {
          clearInterval(drip);
          closed();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const never = new AbortController().signal; // no deadline that would close it anyway
        const res = await guardedFetch(`${origin}/endless`, { ...open, signal: never });
        assert.equal(await text(res), 'final');
        await redirectClosed; // before: read on for as long as the server wrote
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });

    it('refuses an answer that switches protocols (101) at once: before, the call hung past its deadline, as Node ends such a request with no event', async () => {
      const server = net.createServer((socket) => {
        socket.on('error', () => {});
        socket.once('data', () =>
          socket.write(
            'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
          ),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const limit = deadline(60_000); // the refusal comes long before it
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
        for (const method of ['GET', 'POST'])
          await assert.rejects(
            guardedFetch(url, {
              ...open,
              method,
              body: method === 'POST' ? '{}' : undefined,
              signal: limit.signal,
            }),
            (err: Error) =>
              err instanceof UrlRefusedError &&
              /answered 101: switching protocols is refused/.test(err.message),
          );
      } finally {
        limit.done();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });

    it('sets Host and Content-Length itself, whatever the caller says; asks for identity coding unless told otherwise', async () => {
      const res = await guardedFetch(`${a.origin}/final`, {
        ...open,
        method: 'POST',
        headers: { host: 'evil.test', 'content-length': '999', 'transfer-encoding': 'chunked' },
        body: 'abc',
        signal: signal(),
      });
      assert.equal(res.status, 200);
      res.body.resume();
      const last = a.seen.at(-1)!;
      assert.equal(last.headers.host, new URL(a.origin).host);
      assert.equal(last.headers['content-length'], '3');
      assert.equal(last.headers['transfer-encoding'], undefined);
      assert.equal(last.body, 'abc');
      // Answers come as sent unless the caller asks for a coding (and decodes it itself).
      assert.equal(last.headers['accept-encoding'], 'identity');
      const coded = await guardedFetch(`${a.origin}/final`, {
        ...open,
        headers: { 'Accept-Encoding': 'gzip' },
        signal: signal(),
      });
      coded.body.resume();
      assert.equal(a.seen.at(-1)!.headers['accept-encoding'], 'gzip');
    });
  });
});
