// D28: the `Prefer: wait=N` header as the start route reads it (the waits themselves: test/api/runs/await-run-end.test.ts).
import assert from 'node:assert/strict';
import { parsePreferWait } from '../../../api/routes/answer-start';

describe('Prefer: wait parsing (D28)', () => {
  it('parses the preference, capping it at 60 seconds', () => {
    assert.equal(parsePreferWait('wait=5'), 5);
    assert.equal(parsePreferWait('respond-async, wait=100'), 60);
    assert.equal(parsePreferWait('wait=99999999999999999999'), 60); // the most, not none
    assert.equal(parsePreferWait('return=minimal'), 0);
    assert.equal(parsePreferWait(''), 0);
  });
});
