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
