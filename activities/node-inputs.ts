/** What every I/O node starts from: the configured provider it names, and its ports' items as template text. */
import type { Config, Provider } from '../config';
import { itemText } from '../domain/items';
import type { Item } from '../domain/parts';
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

/** Each port's item as the text a template placeholder receives. */
export function templateValues(ports: Record<string, Item>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [port, item] of Object.entries(ports)) values[port] = itemText(item);
  return values;
}
