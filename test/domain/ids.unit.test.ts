import assert from 'node:assert/strict';
import { ID_PREFIXES, IdSequence, idAtOffset, isId, newId, offsetOf } from '../../domain/ids';

function seeded(seed: number): () => number {
  // mulberry32: deterministic, so the tests do not depend on Math.random.
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('ids (D5)', () => {
  it('is the prefix, an underscore and a 26-char Crockford ULID', () => {
    const id = newId('run', 1_700_000_000_000, seeded(1));
    assert.match(id, /^run_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(id.length, 'run_'.length + 26);
  });

  it('encodes the time in the first 10 characters', () => {
    assert.equal(
      newId('item', 0, () => 0),
      'item_00000000000000000000000000',
    );
    assert.equal(newId('item', 2 ** 48 - 1, () => 0.999999).slice(5), '7ZZZZZZZZZZZZZZZZZZZZZZZZZ');
    // Known ULID vector: 1469918176385 ms → 01ARYZ6S41.
    assert.equal(newId('wf', 1469918176385, () => 0).slice(3, 13), '01ARYZ6S41');
  });

  it('sorts by time', () => {
    const random = seeded(7);
    const times = [0, 1, 31, 32, 1_000, 1_699_999_999_999, 1_700_000_000_000, 2_000_000_000_000];
    const ids = times.map((t) => newId('run', t, random));
    assert.deepEqual([...ids].sort(), ids);
  });

  it('differs for the same millisecond with different randomness', () => {
    const random = seeded(3);
    const a = newId('file', 42, random);
    const b = newId('file', 42, random);
    assert.notEqual(a, b);
    assert.equal(a.slice(0, 15), b.slice(0, 15));
  });

  it('tolerates a random source that returns 1', () => {
    assert.match(
      newId('key', 5, () => 1),
      /^key_[0-9A-HJKMNP-TV-Z]{26}$/,
    );
  });

  it('rejects timestamps outside 48 bits', () => {
    assert.throws(() => newId('run', -1, Math.random), RangeError);
    assert.throws(() => newId('run', 2 ** 48, Math.random), RangeError);
    assert.throws(() => newId('run', 1.5, Math.random), RangeError);
  });

  it('isId accepts every prefix it generates and nothing else', () => {
    for (const prefix of ID_PREFIXES) {
      const id = newId(prefix, 1_700_000_000_000, seeded(9));
      assert.equal(isId(prefix, id), true, id);
      for (const other of ID_PREFIXES) if (other !== prefix) assert.equal(isId(other, id), false);
    }
    const good = newId('file', 1_700_000_000_000, seeded(2));
    assert.equal(isId('file', good.toLowerCase()), false);
    assert.equal(isId('file', good.replace(/.$/, 'U')), false); // U is not Crockford
    assert.equal(isId('file', good.slice(0, -1)), false);
    assert.equal(isId('file', `${good}0`), false);
    assert.equal(isId('file', `file_8${good.slice(6)}`), false); // above the 128-bit range
    assert.equal(isId('file', ` ${good}`), false);
    assert.equal(isId('file', 42), false);
    assert.equal(isId('file', undefined), false);
  });

  it('idAtOffset goes back as well as forth, across both halves, and offsetOf inverts it', () => {
    for (const base of [
      newId('item', 1, () => 0),
      newId('item', 1, () => 0.999),
      newId('item', 1, seeded(7)),
    ]) {
      for (const offset of [1, 31, 32 ** 8, 32 ** 8 + 5, 2_000_001]) {
        const ahead = idAtOffset(base, offset);
        assert.equal(idAtOffset(ahead, -offset), base, `${base} ± ${offset}`);
        assert.equal(offsetOf(base, ahead), offset);
      }
    }
  });

  it('an IdSequence gives the ids idAtOffset gives, in order, across carries and back', () => {
    let draws = 0; // the lower half near its top: the first offsets carry into the upper half
    const base = newId('item', 1, () => (draws++ < 8 ? 0.5 : 0.999));
    const sequence = new IdSequence(base);
    let previous = '';
    for (let offset = 0; offset < 3_000; offset++) {
      const id = sequence.at(offset);
      assert.equal(id, idAtOffset(base, offset));
      assert.equal(offsetOf(base, id), offset);
      assert.ok(id > previous, `ids sort as their offsets (${offset})`);
      previous = id;
    }
    // Out of order, as a reader may ask: the kept upper half must follow each answer.
    for (const offset of [-1, 32 ** 8 + 2, 5, -(32 ** 8), 0])
      assert.equal(sequence.at(offset), idAtOffset(base, offset), `offset ${offset}`);
  });
});
