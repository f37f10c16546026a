// D5 ids: `<prefix>_<ULID>`. Time and randomness are parameters so that the Temporal
// workflow sandbox can pass its deterministic clock and PRNG.

/** Every id type the service issues. */
export const ID_PREFIXES = ['run', 'item', 'wf', 'wfv', 'file', 'key', 'acct', 'led'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;
const MAX_TIME = 2 ** 48 - 1;
// A ULID's first character is at most 7: 26 base32 chars hold 130 bits, a ULID has 128.
const ULID_PATTERN = '[0-7][0-9A-HJKMNP-TV-Z]{25}';
const PATTERNS = new Map<IdPrefix, RegExp>(
  ID_PREFIXES.map((p) => [p, new RegExp(`^${p}_${ULID_PATTERN}$`)]),
);

/** Makes a new id `<prefix>_<26-char ULID>` from a millisecond timestamp and a [0,1) random source. */
export function newId(prefix: IdPrefix, nowMs: number, random: () => number): string {
  if (!Number.isInteger(nowMs) || nowMs < 0 || nowMs > MAX_TIME) {
    throw new RangeError(`newId: timestamp ${nowMs} is not an integer in [0, 2^48)`);
  }
  let time = '';
  let t = nowMs;
  for (let i = 0; i < TIME_CHARS; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let rand = '';
  for (let i = 0; i < RANDOM_CHARS; i++) {
    // Clamp so that a misbehaving source returning 1 cannot index past the alphabet.
    const r = Math.min(31, Math.max(0, Math.floor(random() * 32)));
    rand += CROCKFORD[r];
  }
  return `${prefix}_${time}${rand}`;
}

/** True when `value` is a well-formed id of the given type (upper-case Crockford ULID). */
export function isId(prefix: IdPrefix, value: unknown): value is string {
  const re = PATTERNS.get(prefix);
  return re !== undefined && typeof value === 'string' && re.test(value);
}

const RANDOM_SPACE = 32n ** BigInt(RANDOM_CHARS);

/**
 * The id `offset` places after `base` in one monotonic sequence: the same time part, the random
 * part plus `offset` (modulo its 80 bits). A run numbers its output items this way from one random
 * id (D5: unique and sortable), so an item's id follows from the run's first item id and its
 * output index, and a 100,000-item event log can be stored without 100,000 ids (D31).
 */
export function idAtOffset(base: string, offset: number): string {
  return new IdSequence(base).at(offset);
}

/**
 * The ids of one sequence (idAtOffset), for a caller that derives many: the base is decoded once
 * and the upper half's text kept while it does not change, so an id costs one 8-character encode.
 * A stream replaying a million-row run, or its results export, derives millions (~0.14 µs each
 * here, against ~0.9 µs decoding the base every time).
 */
export class IdSequence {
  private readonly head: string;
  // Two 40-bit halves in plain numbers (exact below 2^53).
  private readonly high: number;
  private readonly low: number;
  private lastHigh = -1;
  private lastHead = '';

  constructor(base: string) {
    const cut = base.length - RANDOM_CHARS;
    this.head = base.slice(0, cut);
    this.high = decodeHalf(base, cut);
    this.low = decodeHalf(base, cut + HALF_CHARS);
  }

  at(offset: number): string {
    let low = this.low + offset;
    const carry = Math.floor(low / HALF_SPACE);
    low -= carry * HALF_SPACE;
    // A negative offset (an item's id back to its run's base, domain/run-log.ts) may borrow below zero.
    const high = (((this.high + carry) % HALF_SPACE) + HALF_SPACE) % HALF_SPACE;
    if (high !== this.lastHigh) {
      this.lastHigh = high;
      this.lastHead = this.head + encodeHalf(high);
    }
    return this.lastHead + encodeHalf(low);
  }
}

const HALF_CHARS = RANDOM_CHARS / 2;
const HALF_SPACE = 32 ** HALF_CHARS;
/** Each alphabet character's value, by its char code. */
const DIGITS = new Int8Array(128).fill(-1);
for (let i = 0; i < CROCKFORD.length; i++) DIGITS[CROCKFORD.charCodeAt(i)] = i;
const CHAR_CODES = Array.from(CROCKFORD, (ch) => ch.charCodeAt(0));

function decodeHalf(text: string, from: number): number {
  let n = 0;
  for (let i = from; i < from + HALF_CHARS; i++) n = n * 32 + (DIGITS[text.charCodeAt(i)] ?? -1);
  return n;
}

function encodeHalf(n: number): string {
  const codes = new Array<number>(HALF_CHARS);
  for (let i = HALF_CHARS - 1; i >= 0; i--) {
    codes[i] = CHAR_CODES[n % 32];
    n = Math.floor(n / 32);
  }
  return String.fromCharCode(...codes);
}

/** The offset of `id` from `base` (the inverse of idAtOffset), or -1 when `id` is not of the same sequence. */
export function offsetOf(base: string, id: string): number {
  const cut = base.length - RANDOM_CHARS;
  if (id.length !== base.length || id.slice(0, cut) !== base.slice(0, cut)) return -1;
  const value = (text: string) => {
    let n = 0n;
    for (const ch of text) {
      const digit = CROCKFORD.indexOf(ch);
      if (digit < 0) return -1n;
      n = n * 32n + BigInt(digit);
    }
    return n;
  };
  const a = value(base.slice(cut));
  const b = value(id.slice(cut));
  if (a < 0n || b < 0n) return -1;
  const offset = (b - a + RANDOM_SPACE) % RANDOM_SPACE;
  return offset > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(offset);
}
