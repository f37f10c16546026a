/**
 * Every outbound HTTP request of the worker goes through here (a lint rule in eslint.config.mjs
 * refuses any other): URL inputs (D19), `http_request` nodes, webhooks (D20), provider calls and
 * the URLs inside provider answers. Neither a caller nor a provider's answer may make our worker
 * reach our own network: every host is resolved here, every address checked, and the connection
 * made to exactly the address that was checked (so a DNS answer that changes between check and
 * connect, "DNS rebinding", cannot slip through). Redirects are followed by hand, up to 5, each
 * hop checked the same way. The only exemption is an origin the operator configured (a
 * provider's base URL, `trustedOrigins`), matched exactly: scheme, host and port.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Readable, type Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { LookupFunction } from 'node:net';

/** Why an address is not reachable through the guard; `public` is the only acceptable class. */
export type AddressClass =
  | 'public'
  | 'private'
  | 'loopback'
  | 'link_local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved';

const DESCRIPTIONS: Record<Exclude<AddressClass, 'public'>, string> = {
  private: 'a private network address',
  loopback: 'a loopback address',
  link_local: 'a link-local address',
  metadata: 'a cloud metadata address',
  unspecified: 'an unspecified address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
};

/** How a refusal names an address class, e.g. `a loopback address`. */
export function describeAddressClass(cls: Exclude<AddressClass, 'public'>): string {
  return DESCRIPTIONS[cls];
}

/** The guard refused a URL (scheme, address, redirects): retrying cannot help. */
export class UrlRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UrlRefusedError';
  }
}

type Rule = [bytes: number[], prefixBits: number, cls: Exclude<AddressClass, 'public'>];

// Most specific first: the metadata addresses sit inside the link-local and private ranges.
const V4_RULES: Rule[] = [
  [[169, 254, 169, 254], 32, 'metadata'], // AWS, GCP, Azure, OpenStack ...
  [[100, 100, 100, 200], 32, 'metadata'], // Alibaba Cloud
  [[168, 63, 129, 16], 32, 'metadata'], // Azure's WireServer: public space, reached from every VM
  [[0, 0, 0, 0], 8, 'unspecified'], // "this network"
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'private'], // carrier-grade NAT, often internal in clouds
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link_local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'], // IETF protocol assignments
  [[192, 0, 2, 0], 24, 'reserved'], // documentation
  [[192, 88, 99, 0], 24, 'reserved'], // 6to4 relay anycast
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'], // benchmarking
  [[198, 51, 100, 0], 24, 'reserved'],
  [[203, 0, 113, 0], 24, 'reserved'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'], // and 255.255.255.255 broadcast
];

const v6 = (text: string) => parseIPv6(text)!;
const V6_RULES: Rule[] = [
  [v6('fd00:ec2::254'), 128, 'metadata'], // AWS over IPv6
  [v6('::'), 128, 'unspecified'],
  [v6('::1'), 128, 'loopback'],
  [v6('100::'), 64, 'reserved'], // discard-only
  [v6('64:ff9b:1::'), 48, 'private'], // local-use IPv4/IPv6 translation (RFC 8215): a local NAT64
  [v6('2001::'), 32, 'reserved'], // Teredo: hides an IPv4 address we cannot check
  [v6('2001:db8::'), 32, 'reserved'], // documentation
  [v6('fc00::'), 7, 'private'], // unique local
  [v6('fe80::'), 10, 'link_local'],
  [v6('fec0::'), 10, 'private'], // deprecated site-local
  [v6('ff00::'), 8, 'multicast'],
];

function matches(bytes: number[], rule: Rule): boolean {
  const [net, bits] = rule;
  for (let i = 0; i < net.length; i++) {
    const take = Math.min(8, Math.max(0, bits - i * 8));
    if (take === 0) return true;
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[i] & mask) !== (net[i] & mask)) return false;
  }
  return true;
}

function parseIPv4(text: string): number[] | undefined {
  if (!net.isIPv4(text)) return undefined;
  return text.split('.').map(Number);
}

/** 16 bytes of an IPv6 address (zone id ignored), or undefined when it is not one. */
export function parseIPv6(text: string): number[] | undefined {
  let address = text.replace(/%.*$/, '');
  if (!net.isIPv6(address)) return undefined;
  // A trailing dotted quad (::ffff:1.2.3.4) becomes its two hex groups.
  address = address.replace(
    /(\d+)\.(\d+)\.(\d+)\.(\d+)$/,
    (_m, a, b, c, d) => `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`,
  );
  const [left, right] = address.includes('::') ? address.split('::') : [address, undefined];
  const l = left ? left.split(':') : [];
  const r = right ? right.split(':') : [];
  const groups =
    right === undefined ? l : [...l, ...Array(8 - l.length - r.length).fill('0'), ...r];
  const bytes: number[] = [];
  for (const g of groups) {
    const n = parseInt(g, 16);
    bytes.push(n >> 8, n & 0xff);
  }
  return bytes;
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64 or 6to4), if any. */
function embeddedIPv4(bytes: number[]): number[] | undefined {
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12); // ::ffff:a.b.c.d
  // ::ffff:0:a.b.c.d, IPv4-translated (RFC 2765): a SIIT translator on the path reaches a.b.c.d.
  if (zeros(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zeros(10, 12))
    return bytes.slice(12);
  if (zeros(0, 12) && !zeros(12, 16)) return bytes.slice(12); // ::a.b.c.d (deprecated)
  if (
    bytes[0] === 0x00 &&
    bytes[1] === 0x64 &&
    bytes[2] === 0xff &&
    bytes[3] === 0x9b &&
    zeros(4, 12)
  )
    return bytes.slice(12); // 64:ff9b::/96
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6); // 6to4 2002::/16
  return undefined;
}

/** Classifies an IP address literal; anything that is not an IP literal is `reserved`. */
export function classifyAddress(address: string): AddressClass {
  const v4 = parseIPv4(address);
  if (v4) return V4_RULES.find((rule) => matches(v4, rule))?.[2] ?? 'public';
  const bytes = parseIPv6(address.replace(/^\[|\]$/g, ''));
  if (!bytes) return 'reserved';
  const own = V6_RULES.find((rule) => matches(bytes, rule))?.[2];
  if (own) return own;
  // An IPv6 form of an IPv4 address reaches that IPv4 address: judge it as one.
  const inner = embeddedIPv4(bytes);
  return (inner && V4_RULES.find((rule) => matches(inner, rule))?.[2]) || 'public';
}

export interface GuardOptions {
  /** Allow `http://` besides `https://` (D19: tests and development only). */
  allowHttp: boolean;
  /** Allow every address class, not only public ones (tests only). */
  allowPrivate: boolean;
  /** Host names (lower-case, as in the URL) exempt from the address check; a redirect elsewhere is checked again. */
  allowedHosts?: string[];
  /**
   * Origins from configuration (a provider's base URL), exempt from the scheme and address checks
   * when a URL's origin is exactly one of them (scheme, host and port: another port of the same
   * host is checked like any URL). A redirect elsewhere is checked again.
   */
  trustedOrigins?: string[];
  /** Resolves a host name to all its addresses; defaults to the system resolver. */
  resolve?: (host: string) => Promise<Array<{ address: string; family: number }>>;
}

const systemResolve = (host: string) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * `work`'s answer, or `signal`'s reason as soon as it aborts: a lookup cannot be called off (it
 * runs on libuv's pool until the resolver gives up), but its caller need not wait for it.
 */
function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** True when the URL's origin is exactly one the configuration trusts (http and https only: other schemes have no origin). */
export function isTrustedOrigin(url: URL, opts: Pick<GuardOptions, 'trustedOrigins'>): boolean {
  return (
    (url.protocol === 'https:' || url.protocol === 'http:') &&
    !!opts.trustedOrigins?.includes(url.origin)
  );
}

/**
 * Resolves a URL's host and checks every address it has (an attacker's DNS may mix a public and a
 * private answer); returns the address to connect to. Throws UrlRefusedError, or `signal`'s reason
 * once it aborts: a name whose DNS server never answers keeps the request's deadline and cancel.
 */
export async function checkedAddress(
  url: URL,
  opts: GuardOptions,
  signal?: AbortSignal,
): Promise<{ address: string; family: 4 | 6 }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = net.isIP(host);
  const addresses = literal
    ? [{ address: host, family: literal }]
    : await untilAborted(
        (opts.resolve ?? systemResolve)(host).catch((err: Error & { code?: string }) => {
          throw new Error(`cannot resolve ${host}: ${err.code ?? err.message}`);
        }),
        signal,
      );
  if (addresses.length === 0) throw new Error(`cannot resolve ${host}: no addresses`);
  if (
    !opts.allowPrivate &&
    !opts.allowedHosts?.includes(host.toLowerCase()) &&
    !isTrustedOrigin(url, opts)
  ) {
    for (const { address } of addresses) {
      const cls = classifyAddress(address);
      if (cls !== 'public') {
        throw new UrlRefusedError(
          `${url.origin} is refused: ${host === address ? address : `${host} resolves to ${address}`}, ${DESCRIPTIONS[cls]}`,
        );
      }
    }
  }
  const first = addresses[0];
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}

/** Checks a URL's scheme against the options; returns the parsed URL. */
export function checkedUrl(
  raw: string,
  opts: Pick<GuardOptions, 'allowHttp' | 'trustedOrigins'>,
): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlRefusedError(`'${raw.slice(0, 200)}' is not a URL`);
  }
  if (isTrustedOrigin(url, opts)) return url;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && opts.allowHttp)) {
    throw new UrlRefusedError(`${url.protocol}// URLs are refused: use https://`);
  }
  return url;
}

export interface GuardedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The URL that answered, after redirects. */
  url: URL;
  body: http.IncomingMessage;
}

export const MAX_REDIRECTS = 5;

/** A `lookup` for http(s).request that answers with the address already checked, whatever DNS says now. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    // Node 20 asks for all addresses when it may race IPv4 and IPv6 (autoSelectFamily).
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

/**
 * One request. `pinned` (every URL but a trusted origin's) connects to the checked address on a
 * socket of its own; a trusted origin's request, whose address is not checked, reuses pooled
 * keep-alive sockets (provider calls are frequent, and a new TLS handshake each would cost).
 */
function requestOnce(
  url: URL,
  pinned: { address: string; family: 4 | 6 } | undefined,
  init: {
    method: string;
    headers: Record<string, string>;
    body?: Buffer | StreamedBody;
    signal: AbortSignal;
  },
): Promise<http.IncomingMessage> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: init.method,
      headers: init.body
        ? { ...init.headers, 'content-length': String(init.body.length) }
        : init.headers,
      ...(pinned
        ? {
            lookup: pinnedLookup(pinned.address, pinned.family),
            agent: false, // no pooled socket: each request connects to the address just checked
          }
        : {}),
      signal: init.signal,
    });
    req.once('response', resolve);
    req.once('error', reject);
    // Node hands a 101 (and an answer to CONNECT) to 'upgrade'/'connect', never to 'response', and
    // with no listener destroys the socket without an 'error': the call hung past its deadline
    // (an abort of a destroyed request does nothing), holding its worker slot for good.
    const switched = (answer: http.IncomingMessage, socket: Duplex) => {
      socket.destroy();
      reject(
        new UrlRefusedError(
          `${url.origin} answered ${answer.statusCode}: switching protocols is refused`,
        ),
      );
    };
    req.once('upgrade', switched);
    req.once('connect', switched);
    // Whatever else ends a request before its answer settles the call too (a no-op once answered).
    req.once('close', () =>
      reject(new Error(`${url.origin} closed the connection before answering`)),
    );
    if (!init.body || Buffer.isBuffer(init.body)) req.end(init.body);
    // Sent as it is read; a failed read ends the request with its error.
    else pipeline(Readable.from(init.body.parts()), req).catch((err) => req.destroy(err));
  });
}

/**
 * A body too large to hold in memory: its length in bytes, and its bytes, read anew for each
 * request that sends it (a 307/308 redirect sends it again). The parts must add up to `length`.
 */
export interface StreamedBody {
  length: number;
  parts: () => AsyncIterable<string | Uint8Array>;
}

/** What guardedFetch sends; the guard's options say where it may go. */
export interface GuardedRequest {
  /** Default GET. */
  method?: string;
  /** Names in any case; the transport's own (host, content-length, transfer-encoding, connection) are ignored. */
  headers?: Record<string, string>;
  body?: string | Uint8Array | StreamedBody;
  /** Bounds the whole exchange, every hop and the answer's body included. */
  signal: AbortSignal;
  /** Redirects followed before giving up (default MAX_REDIRECTS); 0 hands a redirect back as the answer. */
  maxRedirects?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// Set by the transport from the URL and the body: a caller's value would contradict ours.
const TRANSPORT_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);
// Credentials meant for the first origin: a redirect must not hand them to another (as fetch does for Authorization).
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);
// Describe the body: dropped with it when a redirect turns the request into a GET (fetch's request-body-header names).
const BODY_HEADERS = new Set([
  'content-type',
  'content-encoding',
  'content-language',
  'content-location',
]);

function withoutHeaders(
  headers: Record<string, string>,
  names: Set<string>,
): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.has(name)));
}

const isStreamed = (body: string | Uint8Array | StreamedBody): body is StreamedBody =>
  typeof body === 'object' && 'parts' in body;

/**
 * Makes one HTTP request of any method through the guard: the scheme is checked, the host
 * resolved and every address checked, and the connection pinned to the checked address. Up to
 * `maxRedirects` redirects (301, 302, 303, 307, 308) are followed by hand, each target checked
 * the same way, with fetch's rules: 303, and 301/302 after a POST, continue as a GET without the
 * body; 307/308 keep method and body; credentials never go to another origin. A hop on a
 * trusted origin (opts.trustedOrigins) skips the checks, and only that hop. The answer's body
 * is left unread for the caller to stream (and to limit). Throws UrlRefusedError for anything
 * the guard refuses, other errors for network failures.
 */
export async function guardedFetch(
  raw: string,
  opts: GuardOptions & GuardedRequest,
): Promise<GuardedResponse> {
  const maxRedirects = opts.maxRedirects ?? MAX_REDIRECTS;
  let url = checkedUrl(raw, opts);
  let method = (opts.method ?? 'GET').toUpperCase();
  let body = opts.body === undefined || isStreamed(opts.body) ? opts.body : Buffer.from(opts.body);
  const given = Object.fromEntries(
    Object.entries(opts.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
  );
  // `identity` unless the caller asks otherwise: without Accept-Encoding a server may code the
  // answer any way it likes, and callers here read the bytes as sent (fetch used to decode them).
  let headers = withoutHeaders(
    { 'user-agent': 'wrs-fetch/1', accept: '*/*', 'accept-encoding': 'identity', ...given },
    TRANSPORT_HEADERS,
  );
  for (let hop = 0; ; hop++) {
    const pinned = isTrustedOrigin(url, opts)
      ? undefined
      : await checkedAddress(url, opts, opts.signal);
    const res = await requestOnce(url, pinned, { method, headers, body, signal: opts.signal });
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (!REDIRECTS.has(status) || !location || maxRedirects === 0)
      return { status, headers: res.headers, url, body: res };
    // Dropped, not drained: a body that never ends would keep its connection reading for good.
    res.destroy();
    if (hop >= maxRedirects)
      throw new UrlRefusedError(`more than ${maxRedirects} redirects from ${new URL(raw).origin}`);
    const next = checkedUrl(
      URL.canParse(location, url.href) ? new URL(location, url).href : location,
      opts,
    );
    if (
      status === 303
        ? method !== 'GET' && method !== 'HEAD'
        : (status === 301 || status === 302) && method === 'POST'
    ) {
      method = 'GET';
      body = undefined;
      headers = withoutHeaders(headers, BODY_HEADERS);
    }
    if (next.origin !== url.origin) headers = withoutHeaders(headers, CREDENTIAL_HEADERS);
    url = next;
  }
}

/**
 * GETs a URL through the guard, following up to 5 redirects (each target checked again). The
 * answer's body is left unread for the caller to stream (and to limit); `signal` bounds the
 * whole exchange, body included.
 */
export function guardedGet(
  raw: string,
  opts: GuardOptions & { signal: AbortSignal; headers?: Record<string, string> },
): Promise<GuardedResponse> {
  return guardedFetch(raw, { ...opts, method: 'GET' });
}
