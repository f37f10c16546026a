/**
 * D17: what a provider reports is untrusted (activities/pricing.ts): a prediction's seconds that
 * are negative, not finite or past a day cost nothing, so no answer can credit an account or bill
 * it without end; token costs follow the counts they are given.
 */
import assert from 'node:assert/strict';
import { predictionSeconds, tokenCost } from '../../activities/pricing';

const prices = { m: { input_per_mtok: 10, output_per_mtok: 20, per_image: 0, per_second: 0 } };

describe('pricing of provider reports', () => {
  it('counts a prediction’s seconds only when they are a finite number from 0 up to a day', () => {
    assert.deepEqual(
      [2.5, '3', 86_400, -5, -Infinity, Infinity, Number.NaN, 'soon', null, undefined, 86_401].map(
        predictionSeconds,
      ),
      [2.5, 3, 86_400, 0, 0, 0, 0, 0, 0, 0, 0],
    );
  });

  it('prices token counts by the model’s table; an unpriced model costs nothing', () => {
    assert.equal(tokenCost(prices, 'm', { input: 100, output: 100 }), 0.003);
    assert.equal(tokenCost(prices, 'unpriced', { input: 100, output: 100 }), 0);
  });
});
