/**
 * The signer every process uses for D19 links: the API (upload answers, serving content) and the
 * worker (input and output parts) must agree on the secret. FILE_URL_SECRET is that secret
 * (required in production, config/index.ts); without it, for `npm start` and tests, the first
 * process creates a random one in MongoDB (`settings` collection) and every other reads it, so
 * the API and any number of workers agree without configuration.
 */
import type { Db } from 'mongodb';
import type { Config } from '../../config';
import { sharedDevSecret } from '../../store/settings';
import {
  checkFileSignature,
  signedQuery,
  signFileUrl,
  streamPath,
  streamSubject,
  type LinkCheck,
} from './signing';

/** Where this service is reachable for links made without a request at hand (the worker). */
export function defaultBaseUrl(config: Pick<Config, 'api'>): string {
  if (config.api.publicBaseUrl) return config.api.publicBaseUrl;
  const host = ['0.0.0.0', '::', ''].includes(config.api.host) ? '127.0.0.1' : config.api.host;
  const scheme = config.api.tls ? 'https' : 'http';
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${config.api.port}`;
}

/** Signs and checks file links (and D34 stream links) with the configured (or shared development) secret. */
export class FileLinks {
  private secret?: Promise<string>;

  constructor(
    private readonly config: Pick<Config, 'api' | 'files'>,
    private readonly db: Db,
  ) {}

  private key(): Promise<string> {
    if (this.config.files.urlSecret) return Promise.resolve(this.config.files.urlSecret);
    this.secret ??= sharedDevSecret(this.db).catch((err: unknown) => {
      this.secret = undefined; // a MongoDB hiccup must not poison every later link
      throw err;
    });
    return this.secret;
  }

  /**
   * A signed link to `fileId` under `baseUrl` (default: PUBLIC_BASE_URL, else the API's own
   * address); with `keyId` (a link handed to a caller), it works only while that key is live.
   */
  async url(
    fileId: string,
    baseUrl = defaultBaseUrl(this.config),
    keyId?: string,
  ): Promise<string> {
    return signFileUrl({
      baseUrl,
      secret: await this.key(),
      fileId,
      ttlSeconds: this.config.files.urlTtlSeconds,
      keyId,
    });
  }

  /** Checks a link's `expires`, `kid` and `sig` query values for `fileId` (not whether its key is live). */
  async check(fileId: string, expires: unknown, sig: unknown, kid?: unknown): Promise<LinkCheck> {
    return checkFileSignature(await this.key(), fileId, expires, sig, Date.now(), kid);
  }

  /** D34: a signed link to a run's stream for key `keyId`, valid for `ttlSeconds`, with the same secret as file links. */
  async streamUrl(
    runId: string,
    baseUrl: string,
    ttlSeconds: number,
    keyId: string,
    nowMs = Date.now(),
  ): Promise<{ url: string; expires: number }> {
    const expires = Math.floor(nowMs / 1000) + ttlSeconds;
    const query = signedQuery(await this.key(), streamSubject(runId), expires, keyId);
    return { url: `${baseUrl.replace(/\/+$/, '')}${streamPath(runId)}?${query}`, expires };
  }

  /** Checks a stream link's `expires`, `kid` and `sig` query values for `runId` (not whether its key is live). */
  async checkStream(
    runId: string,
    expires: unknown,
    sig: unknown,
    kid?: unknown,
  ): Promise<LinkCheck> {
    return checkFileSignature(
      await this.key(),
      streamSubject(runId),
      expires,
      sig,
      Date.now(),
      kid,
    );
  }
}
