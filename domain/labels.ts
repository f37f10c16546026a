// D3 label normalization. Shared by publishing (contract keys) and the run API (input
// matching), so both sides agree on every key byte for byte.

const NOT_LETTER_OR_DIGIT = /[^\p{L}\p{N}]+/gu;
const EDGE_UNDERSCORES = /^_+|_+$/g;

/** Normalizes a User Input / User Result label to its API key (D3): NFKC, lower-case, non-alphanumeric runs → `_`, trimmed. */
export function normalizeLabel(label: string): string {
  return label
    .normalize('NFKC')
    .toLowerCase()
    .replace(NOT_LETTER_OR_DIGIT, '_')
    .replace(EDGE_UNDERSCORES, '');
}

/**
 * Characters a label or a name may not hold: control characters (NUL ...), bidi controls
 * (U+202E makes text read backwards), line and paragraph separators, lone surrogates and the
 * invisible ones (zero-width space, word joiner, BOM, soft hyphen). Zero-width joiners stay
 * allowed: emoji sequences and Indic and Persian spelling need them.
 */
const UNSAFE_TEXT = /[\p{Cc}\p{Bidi_Control}\p{Zl}\p{Zp}\p{Cs}\u200B\u2060\uFEFF\u00AD]/u;

/** The first character `text` may not hold (as `U+XXXX`), or undefined. */
export function unsafeCharacter(text: string): string | undefined {
  const m = UNSAFE_TEXT.exec(text);
  return m ? `U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}` : undefined;
}

// Scripts whose letters pass for one another; a word mixing them is a spoofing risk, while Han,
// Hiragana and Katakana mix in ordinary Japanese and stay allowed.
const LOOK_ALIKE_SCRIPTS = [
  ['Latin', /\p{Script=Latin}/u],
  ['Greek', /\p{Script=Greek}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
] as const;

/** The scripts a word of a key mixes among Latin, Greek and Cyrillic (`['Latin', 'Cyrillic']`), or undefined. */
export function mixedScripts(key: string): string[] | undefined {
  for (const word of key.split('_')) {
    const scripts = LOOK_ALIKE_SCRIPTS.filter(([, re]) => re.test(word)).map(([name]) => name);
    if (scripts.length > 1) return scripts;
  }
  return undefined;
}

// Greek and Cyrillic lower-case letters drawn like Latin ones (after NFKC and lower-casing).
// prettier-ignore
const LATIN_LOOK_ALIKES: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', ё: 'ë', і: 'i', ї: 'ï', ј: 'j', к: 'k', о: 'o', р: 'p', с: 'c',
  у: 'y', х: 'x', ѕ: 's', ԁ: 'd', һ: 'h', ӏ: 'l', ԛ: 'q', ԝ: 'w', ү: 'y', ɑ: 'a',
  α: 'a', β: 'b', ε: 'e', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x',
};

/**
 * A key's look: Greek and Cyrillic letters that look Latin become those Latin letters, so
 * `nаme` (Cyrillic а) and `name` share one. Two inputs (or results) whose keys look alike
 * would be told apart by no one reading the contract.
 */
export function keySkeleton(key: string): string {
  let out = '';
  for (const ch of key) out += Object.hasOwn(LATIN_LOOK_ALIKES, ch) ? LATIN_LOOK_ALIKES[ch] : ch;
  return out;
}
