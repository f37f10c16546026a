/** D35: the CSV results file's lines (api/runs/output-csv.ts): RFC 4180 quoting, parts as text, formulas defused. */
import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';
import { CSV_HEADER, csvLine, itemCsv } from '../../../api/runs/output-csv';
import type { OutputItem } from '../../../domain/run';

const item = (over: Partial<OutputItem>): OutputItem => ({
  id: 'item_0001',
  item_index: 0,
  status: 'completed',
  parts: [],
  ...over,
});

/** One line read back by a real CSV parser (csv-parse, the one the rows of files are read with). */
const fields = (line: string) => parse(line, { relax_column_count: false })[0] as string[];

describe('the CSV results file (D35)', () => {
  it('writes text, JSON and file parts as text, one part per line, and a failed item’s message', () => {
    const line = csvLine(
      item({
        item_index: 7,
        parts: [
          { type: 'text', text: 'a, "quoted" answer\nover two lines' },
          { type: 'json', data: { score: 1 } },
          { type: 'json', data: 'a JSON string' },
          { type: 'image', url: 'http://127.0.0.1/files/file_1/content?sig=x' },
        ],
      }),
    );
    assert.ok(line.endsWith('\r\n'));
    assert.deepEqual(fields(line), [
      '7',
      'item_0001',
      'completed',
      'a, "quoted" answer\nover two lines\n{"score":1}\na JSON string\nhttp://127.0.0.1/files/file_1/content?sig=x',
      '',
    ]);
    assert.deepEqual(
      fields(csvLine(item({ status: 'failed', error: { message: 'The model refused, twice' } }))),
      ['0', 'item_0001', 'failed', '', 'The model refused, twice'],
    );
  });

  it('defuses fields a spreadsheet would evaluate as formulas', () => {
    for (const text of ['=1+1', '+SUM(A1)', '-2+3', '@cmd', '\tx', '\rx']) {
      const [, , , output] = fields(csvLine(item({ parts: [{ type: 'text', text }] })));
      assert.equal(output, `'${text}`);
    }
    const [, , , plain] = fields(csvLine(item({ parts: [{ type: 'text', text: 'a - b = c' }] })));
    assert.equal(plain, 'a - b = c');
  });

  it('starts with the header, also for an output without items', async () => {
    const pieces: string[] = [];
    for await (const piece of itemCsv((async function* () {})())) pieces.push(piece);
    assert.deepEqual(pieces, [CSV_HEADER]);
    assert.deepEqual(fields(CSV_HEADER), ['item_index', 'id', 'status', 'output', 'error']);
  });
});
