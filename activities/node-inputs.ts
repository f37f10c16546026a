/** What every I/O node starts from: the configured provider it names, and its row's filled templates. */
import { ApplicationFailure } from '@temporalio/activity';
import type { Config, Provider } from '../config';
import { INLINE_ROW_MAX_BYTES } from '../domain/item-blocks';
import { itemLookup } from '../domain/items';
import type { Item } from '../domain/parts';
import { TemplateTooLarge, templateFiller } from '../domain/templates';
import { invalidNodeConfig } from './failures';

/** The failure type of a row whose templates fill past their bound: its item fails in place, no call made. */
export const TEMPLATE_TOO_LARGE = 'TemplateTooLarge';

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

/**
 * Fills one row's templates (a prompt and its system message, a URL, headers and body, a model's
 * input): together they hold at most the larger of 1 MiB and the row's own item bound, so a
 * template that repeats a placeholder over a large value is refused before its text is built (a
 * few rows of 200 KB under a prompt of 2,500 placeholders ran the worker out of heap before).
 */
export function rowTemplates(req: {
  ports: Record<string, Item>;
  rowMaxBytes?: number;
}): (template: string) => string {
  const fill = templateFiller(
    itemLookup(req.ports),
    Math.max(INLINE_ROW_MAX_BYTES, req.rowMaxBytes ?? 0),
  );
  return (template) => {
    try {
      return fill(template);
    } catch (err) {
      if (err instanceof TemplateTooLarge)
        throw ApplicationFailure.nonRetryable(
          `the request's templates would fill more than ${err.maxLength} characters, the most one request may hold`,
          TEMPLATE_TOO_LARGE,
        );
      throw err;
    }
  };
}
