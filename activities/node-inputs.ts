/** What every I/O node starts from: the configured provider it names. */
import type { Config, Provider } from '../config';
import { invalidNodeConfig } from './failures';

/** The provider `name` of `kind`, or a permanent failure naming it (`role` says which node type asked). */
export function configuredProvider(
  config: Pick<Config, 'providers'>,
  role: string,
  name: string,
  kind: Provider['kind'],
): Provider {
  const provider = config.providers[name];
  if (!provider || provider.kind !== kind) {
    throw invalidNodeConfig(`${role} provider '${name}' is not configured on this service`);
  }
  return provider;
}
