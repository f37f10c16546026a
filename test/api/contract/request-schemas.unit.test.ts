import assert from 'node:assert/strict';
import {
  ContractQuerySchema,
  ListRunsQuerySchema,
  OutputItemsQuerySchema,
  parseRequest,
  StartRequestSchema,
} from '../../../api/contract/request-schemas';
import { InvalidRequestError } from '../../../domain/errors';

/** The 400 parseRequest throws for `value`. */
function refusal(...args: Parameters<typeof parseRequest>): InvalidRequestError {
  try {
    parseRequest(...args);
  } catch (err) {
    assert.ok(err instanceof InvalidRequestError, String(err));
    return err;
  }
  assert.fail('expected a refusal');
}

describe('parseRequest', () => {
  it('names a body that is not an object `body`, not `workflow`', () => {
    const err = refusal(StartRequestSchema, [1, 2]);
    assert.equal(err.message, 'Invalid request: `body` must be an object, not an array');
    assert.deepEqual(err.details, [{ field: 'body', problem: 'must be an object, not an array' }]);
    assert.equal(err.param, 'body');
    assert.equal(err.code, undefined); // docs/api.md: an invalid field has `param` and no `code`
  });

  it("names the owner of an unknown field as the request's body or query", () => {
    const body = refusal(StartRequestSchema, { workflowId: 'hello', inputs: {}, colour: 1 });
    assert.deepEqual(body.details, [
      { field: 'colour', problem: 'is not a field of the request body' },
    ]);
    const query = refusal(ListRunsQuerySchema, { after: 'x' }, 'query');
    assert.deepEqual(query.details, [{ field: 'after', problem: 'is not a field of the query' }]);
    assert.equal(query.message, 'Invalid query: `after` is not a field of the query');
  });

  it('lists at most 100 problems in `details`, however many a body holds, and says how many more', () => {
    const metadata = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`!${i}`, '']));
    const err = refusal(StartRequestSchema, { workflowId: 'hello', metadata });
    assert.equal(err.code, 'invalid_metadata');
    assert.equal(err.details!.length, 100);
    assert.deepEqual(err.details![0], {
      field: 'metadata["!0"]',
      problem: 'is not a valid key: keys are 1–64 letters, digits, `_`, `-` or `.`',
    });
    assert.match(err.details![99].problem, /\(and 99900 more problems, not listed\)$/);
    assert.match(err.message, /; and 99990 more \(`details` lists the first 100\)$/);
    assert.ok(JSON.stringify(err.details).length < 20_000);
  });

  it("states a number's own bounds, not the safe-integer range zod checks first", () => {
    const high = refusal(ListRunsQuerySchema, { limit: '99999999999999999999' }, 'query');
    assert.deepEqual(high.details, [{ field: 'limit', problem: 'must be ≤ 100' }]);
    const low = refusal(ListRunsQuerySchema, { limit: '-99999999999999999999' }, 'query');
    assert.deepEqual(low.details, [{ field: 'limit', problem: 'must be ≥ 1' }]);
    const fraction = refusal(ListRunsQuerySchema, { limit: '1.5' }, 'query');
    assert.deepEqual(fraction.details, [{ field: 'limit', problem: 'must be an integer' }]);
  });

  it("says what a metadata key and a time filter take, not zod's words", () => {
    const key = refusal(ListRunsQuerySchema, { 'metadata[a][b]': '1' }, 'query');
    assert.equal(key.code, 'invalid_metadata');
    assert.deepEqual(key.details, [
      {
        field: 'metadata["a][b"]',
        problem: 'is not a valid key: keys are 1–64 letters, digits, `_`, `-` or `.`',
      },
    ]);
    const time = refusal(ListRunsQuerySchema, { created_after: 'yesterday' }, 'query');
    assert.match(
      time.details![0].problem,
      /^must be an ISO 8601 date-time .* or a date \(2026-01-31\)$/,
    );
  });
  it('says what a value that is no (finite) number, a version, or a repeated parameter should be', () => {
    const word = refusal(ListRunsQuerySchema, { limit: 'ten' }, 'query');
    assert.deepEqual(word.details, [{ field: 'limit', problem: 'must be a number' }]);
    // Decimal digits only: other spellings of 2 are no number.
    for (const limit of ['0x2', '2e0', '0b10', ' 2', '+2', ''])
      for (const schema of [ListRunsQuerySchema, OutputItemsQuerySchema])
        assert.deepEqual(refusal(schema, { limit }, 'query').details, [
          { field: 'limit', problem: 'must be a number' },
        ]);
    assert.equal(parseRequest(OutputItemsQuerySchema, { limit: '2' }, 'query').limit, 2);
    // JSON.parse makes 1e400 Infinity.
    const huge = refusal(StartRequestSchema, { workflowId: 'hello', inputs: {}, max_cost: 1e400 });
    assert.deepEqual(huge.details, [{ field: 'max_cost', problem: 'must be a finite number' }]);
    // A cap the account's credit sums could not count in cents (its hold is the cap, D36).
    for (const max_cost of [100_000.01, 281474976710656, 1e308])
      assert.equal(
        refusal(StartRequestSchema, { workflowId: 'hello', inputs: {}, max_cost }).param,
        'max_cost',
      );
    assert.equal(
      StartRequestSchema.parse({ workflowId: 'hello', inputs: {}, max_cost: 100_000 }).max_cost,
      100_000,
    );
    const forms = 'must be a version number (1, 2, …) or a version id (`wfv_…`)';
    // Digits only, as a start's body takes an integer: `1e0`, `0x1` and `01` were read as 1.
    for (const given of ['latest', '0', '1e0', '0x1', '01', '1.0', ' 1'])
      assert.deepEqual(refusal(ContractQuerySchema, { version: given }, 'query').details, [
        { field: 'version', problem: forms },
      ]);
    assert.deepEqual(parseRequest(ContractQuerySchema, { version: '12' }, 'query'), {
      version: 12,
    });
    // koa hands a parameter given twice over as a list.
    const twice = refusal(ListRunsQuerySchema, { limit: ['1', '2'], status: 'failed' }, 'query');
    assert.equal(twice.message, 'Invalid query: `limit` is given more than once');
    assert.equal(twice.param, 'limit');
    assert.equal(twice.code, undefined);
    const filter = refusal(ListRunsQuerySchema, { 'metadata[a]': ['1', '2'] }, 'query');
    assert.equal(filter.code, 'invalid_metadata'); // docs/api.md: `metadata[<key>]` once per key
    assert.deepEqual(filter.details, [
      { field: 'metadata[a]', problem: 'is given more than once' },
    ]);
  });
});
