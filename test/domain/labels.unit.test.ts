import assert from 'node:assert/strict';
import { normalizeLabel } from '../../domain/labels';

describe('normalizeLabel (D3)', () => {
  const table: [string, string][] = [
    ['Product Name', 'product_name'],
    ['  Hero Image (4:3) ', 'hero_image_4_3'],
    ['product_name', 'product_name'],
    ['PRODUCT-NAME', 'product_name'],
    ['Ｐｒｏｄｕｃｔ', 'product'], // full-width letters fold under NFKC
    ['Ｎａｍｅ　２', 'name_2'], // full-width digit and ideographic space
    ['ﬁle', 'file'], // ligature ﬁ expands under NFKC
    ['Café Crème', 'café_crème'], // accents are letters and are kept
    ['Cafe\u0301', 'café'], // combining accent composes under NFKC
    ['Step 1 / Step 2', 'step_1_step_2'],
    ['x²', 'x2'], // superscript two is compatibility-equivalent to 2
    ['Rocket 🚀 launch!!!', 'rocket_launch'],
    ['a...b---c', 'a_b_c'],
    ['__private__', 'private'],
    ['Ünïcödé Ñame', 'ünïcödé_ñame'],
    ['日本語 ラベル', '日本語_ラベル'],
    ['Ⅻ Chapter', 'xii_chapter'], // roman numeral twelve decomposes to letters
    ['!!! ??? ...', ''],
    ['', ''],
    ['🚀', ''],
  ];
  for (const [label, key] of table) {
    it(`${JSON.stringify(label)} → ${JSON.stringify(key)}`, () => {
      assert.equal(normalizeLabel(label), key);
    });
  }

  it('is idempotent', () => {
    for (const [label] of table) {
      const once = normalizeLabel(label);
      assert.equal(normalizeLabel(once), once);
    }
  });
});
