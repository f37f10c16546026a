import type { Price } from '../config';

/**
 * USD cost of a model call from its token counts (non-negative integers: activities/llm.ts
 * reportedTokens) and the configured price table (D17); unknown models cost nothing.
 */
export function tokenCost(
  prices: Record<string, Price>,
  model: string,
  tokens: { input: number; output: number },
): number {
  const price = prices[model];
  if (!price) return 0;
  return (tokens.input * price.input_per_mtok + tokens.output * price.output_per_mtok) / 1e6;
}

/**
 * D17: the seconds of a prediction as its provider reported them, untrusted: anything but a finite
 * number from 0 up to a day (longer than any node may run) counts as 0 (a negative one would
 * credit the account, an infinite one bill it without end).
 */
export function predictionSeconds(reported: unknown): number {
  const seconds = Number(reported ?? 0);
  return Number.isFinite(seconds) && seconds > 0 && seconds <= 86_400 ? seconds : 0;
}
