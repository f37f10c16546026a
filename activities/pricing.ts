import type { Price } from '../config';

/** USD cost of a model call from its token usage and the configured price table (D17); unknown models cost nothing. */
export function tokenCost(
  prices: Record<string, Price>,
  model: string,
  usage: { prompt_tokens?: number; completion_tokens?: number } | undefined,
): number {
  const price = prices[model];
  if (!price || !usage) return 0;
  return (
    ((usage.prompt_tokens ?? 0) * price.input_per_mtok +
      (usage.completion_tokens ?? 0) * price.output_per_mtok) /
    1e6
  );
}
