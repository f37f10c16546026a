/**
 * The setup most test files share, written once: mocha hooks that start the fake provider (when
 * asked), a service on the shared stack and an account with a key and credit, and close them all
 * after the block. The returned context is filled by the `before` hook, so read it inside tests
 * and later hooks only:
 *
 *   const ctx = useService({ fakeOpenAI: true, env: { PRICES } });
 *   it('…', async () => call(ctx.svc.url, 'GET', '/api/v1/runs', { key: ctx.key }));
 */
import { newAccount } from './accounts';
import { startService, type ServiceOptions, type TestService } from './service';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai';

export interface UseServiceOptions extends Omit<ServiceOptions, 'env'> {
  /** Env overrides; a function is called in the hook, for values known only then (another fake's URL). */
  env?: Record<string, string> | (() => Record<string, string>);
  /** Start the fake OpenAI-compatible provider and point OPENAI_BASE_URL at it. */
  fakeOpenAI?: boolean;
  /** The account's credit in USD (default 10). */
  credit?: number;
  /** Create the block's account (default true); tests that make their own accounts say false. */
  account?: boolean;
}

export interface ServiceContext {
  svc: TestService;
  /** The block's account: its id, API key and key id (unset with `account: false`). */
  accountId: string;
  key: string;
  keyId: string;
  /** The fake provider (only with `fakeOpenAI: true`). */
  fake: FakeOpenAI;
  /** A further account on the same service (credit as `newAccount`: 10 unless given), for tests that need their own balance or rate-limit windows. */
  newAccount(credit?: number): Promise<{ accountId: string; key: string; keyId: string }>;
}

/** Registers the before/after hooks in the current describe block and returns their context. */
export function useService(opts: UseServiceOptions = {}): ServiceContext {
  const { fakeOpenAI, credit = 10, account = true, env: envOption, ...serviceOptions } = opts;
  const ctx = {
    newAccount: (creditUsd?: number) => newAccount(ctx.svc.store.collections, creditUsd),
  } as ServiceContext;

  before(async () => {
    const env = { ...(typeof envOption === 'function' ? envOption() : envOption) };
    if (fakeOpenAI) {
      ctx.fake = await startFakeOpenAI();
      env.OPENAI_BASE_URL = ctx.fake.baseUrl;
    }
    ctx.svc = await startService({ ...serviceOptions, env });
    if (account) Object.assign(ctx, await ctx.newAccount(credit));
  });
  after(async () => {
    await ctx.svc?.close();
    await ctx.fake?.close();
  });
  return ctx;
}
