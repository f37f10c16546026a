/** The CLI's text helpers (cli/format.ts): what reaches an operator's terminal. */
import assert from 'node:assert/strict';
import { table, terminalSafe } from '../../cli/format';

describe('CLI text (cli/format.ts)', () => {
  it('lays out a table of 200,000 rows (a long ledger; before: the stack overflowed)', () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => [String(i), 'x']);
    const lines = table(['N', 'NOTE'], rows);
    assert.equal(lines.length, 200_001);
    assert.equal(lines[0], 'N       NOTE');
  });

  it('keeps every cell of a table on its line', () => {
    assert.deepEqual(table(['A', 'B'], [['one\ntwo', 'x']]), ['A         B', 'one\\ntwo  x']);
  });

  it('writes control and format characters out as JSON escapes, astral ones by their surrogates', () => {
    assert.equal(terminalSafe('a\x1b[2Jb\tc\nd'), 'a\\u001b[2Jb\tc\nd');
    assert.equal(terminalSafe('\u{1D173}'), '\\ud834\\udd73'); // MUSICAL SYMBOL BEGIN BEAM (Cf)
    assert.equal(JSON.parse(`"${terminalSafe('\u009b\u202e')}"`), '\u009b\u202e');
  });
});
