/** The rows of an uploaded file (lib/files/rows.ts, D31/D35): JSON array, JSON Lines, CSV, cut at any byte, errors naming the line. */
import assert from 'node:assert/strict';
import { formatOf, readRows, type RowsFormat } from '../../../lib/files/rows';

/** The rows of `text` fed `size` bytes at a time (so tokens and UTF-8 characters are cut across chunks). */
async function rows(
  text: string | Buffer,
  format?: RowsFormat,
  size = 3,
  maxRows = 1_000,
  maxRowChars?: number,
): Promise<unknown[]> {
  const bytes = Buffer.from(text);
  const source = (async function* () {
    for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
  })();
  const out: unknown[] = [];
  for await (const row of readRows(source, format, maxRows, maxRowChars)) out.push(row);
  return out;
}

describe('file rows (lib/files/rows.ts)', () => {
  it('reads a JSON array element by element: strings with brackets and escapes, nesting, é cut across chunks', async () => {
    const text = '\uFEFF[1, "a,]b\\"é", {"x": [1, {"y": "}"}]},\n null, []]';
    assert.deepEqual(await rows(text), [1, 'a,]b"é', { x: [1, { y: '}' }] }, null, []]);
    assert.deepEqual(await rows(' [ ] '), []);
  });

  it('reads JSON Lines, skipping blank lines, with or without a last newline', async () => {
    assert.deepEqual(await rows('{"a":1}\n\n"s"\r\n3'), [{ a: 1 }, 's', 3]);
    assert.deepEqual(await rows('"x"\n', 'jsonl'), ['x']);
  });

  it('reads CSV with a header row: quoted commas and newlines', async () => {
    assert.deepEqual(await rows('name,city\nAda,"London, UK"\n"B\nC",Paris\n', 'csv'), [
      { name: 'Ada', city: 'London, UK' },
      { name: 'B\nC', city: 'Paris' },
    ]);
  });

  it('names the line of a malformed row in every format', async () => {
    await assert.rejects(rows('"a"\n"b"\n{"broken": \n"d"\n'), /^RowsError: line 3: /);
    await assert.rejects(rows('[1,\n2,\n{x}]'), /line 3: /);
    await assert.rejects(rows('[1,2] x'), /line 1: unexpected 'x' after the end of the array/);
    await assert.rejects(rows('[1,\n2'), /line 2: the array is not closed/);
    await assert.rejects(rows('a,b\n1,2\n3\n', 'csv'), /line 3: /);
  });

  it('refuses a row nested deeper than 64 levels in either JSON format, naming its line (60,000 deep overflowed the stack of the batch)', async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    await assert.rejects(
      rows(`"a"\n${deep(60_000)}\n`, 'jsonl', 4_096, 1_000, 200_000),
      /^RowsError: line 2: the row nests deeper than 64 levels$/,
    );
    await assert.rejects(
      rows(`[1,\n${deep(65)}]`),
      /^RowsError: line 2: the row nests deeper than 64 levels$/,
    );
    assert.equal((await rows(`[${deep(64)}]`)).length, 1);
  });

  it('stops past the row limit, naming it', async () => {
    await assert.rejects(rows('1\n2\n3\n', undefined, 3, 2), /more than 2 rows/);
    assert.equal((await rows('1\n2\n', undefined, 3, 2)).length, 2);
  });

  it('refuses a row longer than the most a row holds in every format, as soon as it is, naming its line', async () => {
    const long = 'x'.repeat(50);
    const within = async (text: string, format: RowsFormat) => rows(text, format, 7, 1_000, 40);
    await assert.rejects(
      within(`"a"\n"${long}"\n"c"\n`, 'jsonl'),
      /^RowsError: line 2: the row is longer than 40 characters, the most one row of a list holds$/,
    );
    await assert.rejects(within(`"a"\n"${long}`, 'jsonl'), /line 2: the row is longer than 40/);
    await assert.rejects(within(`[1,\n"${long}", 3]`, 'json'), /line 2: the row is longer than 40/);
    await assert.rejects(within(`[1,\n"${long}"`, 'json'), /line 2: the row is longer than 40/);
    await assert.rejects(within(`a,b\n1,2\n${long},3\n`, 'csv'), /^RowsError: line 3: /);
    assert.deepEqual(await within(`"${'y'.repeat(30)}"\n`, 'jsonl'), ['y'.repeat(30)]);

    // An endless row is refused once it passes the bound: not read on to its end.
    let read = 0;
    const endless = (async function* () {
      yield '"';
      for (;;) {
        read += 1_000;
        yield 'z'.repeat(1_000);
      }
    })();
    await assert.rejects(async () => {
      for await (const row of readRows(endless, 'jsonl', 10, 10_000)) assert.fail(String(row));
    }, /line 1: the row is longer than 10000/);
    assert.ok(read <= 11_000, `${read} characters read`);
  });

  it('refuses a CSV line of more than five times the bound, though its values are empty (64 MB of commas killed the worker)', async () => {
    let read = 0;
    const commas = (async function* () {
      yield 'a\n';
      for (;;) {
        read += 1_000;
        yield ','.repeat(1_000);
      }
    })();
    await assert.rejects(async () => {
      for await (const row of readRows(commas, 'csv', 10, 1_000)) assert.fail(String(row));
    }, /^RowsError: line 2: the row is longer than 1000 characters/);
    assert.ok(read <= 6_000, `${read} characters read`);
    // Within it, a row of quoted quotes is read: each of its characters is five of the line.
    const quotes = Array(199).fill('""""').join(',');
    const header = Array(199)
      .fill(0)
      .map((_, i) => `c${i}`)
      .join(',');
    const [row] = await rows(`${header}\n${quotes}\n`, 'csv', 7, 10, 1_000);
    assert.equal(Object.values(row as object).join(''), '"'.repeat(199));
  });

  it('bounds a CSV record, not a line: quoted line ends between its commas do not reset the count (105 MB of them killed the worker)', async () => {
    let read = 0;
    const record = (async function* () {
      yield 'a\n"\n"';
      for (;;) {
        read += 1_003;
        yield `${','.repeat(1_000)}"\n"`; // one record: each line end is a value, inside quotes
      }
    })();
    await assert.rejects(async () => {
      for await (const row of readRows(record, 'csv', 10, 1_000)) assert.fail(String(row));
    }, /^RowsError: line \d+: the row is longer than 1000 characters/);
    assert.ok(read <= 7_000, `${read} characters read`);
    // A line end other than the file's (its first, as csv-parse reads it) is a character of the
    // record: commas with a lone `\r` every 900 in a file of `\n` lines, or a lone `\n` in a file
    // of `\r\n` lines, are one record (a first fix reset at each).
    for (const [header, end] of [
      ['h\n', '\r'],
      ['h\r\n', '\n'],
    ]) {
      let other = 0;
      const split = (async function* () {
        yield header;
        for (;;) {
          other += 901;
          yield `${','.repeat(900)}${end}`;
        }
      })();
      await assert.rejects(async () => {
        for await (const row of readRows(split, 'csv', 10, 1_000)) assert.fail(String(row));
      }, /the row is longer than 1000 characters/);
      assert.ok(other <= 7_000, `${other} characters read (${JSON.stringify(end)})`);
    }
    // Line ends outside quotes end records, `\r` alone too (csv-parse reads such files): many
    // short rows are read, where before they counted as one line past the bound.
    const lines = Array.from({ length: 3_000 }, (_, i) => `row${i}`);
    for (const end of ['\r', '\r\n', '\n'])
      for (const size of [4_096, 1]) {
        // Fed a character at a time too: a `\r` at a chunk's end waits for the next chunk's first.
        const text = `name${end}${lines.slice(0, size === 1 ? 50 : 3_000).join(end)}${end}`;
        const read = await rows(text, 'csv', size, 10_000, 1_000);
        assert.equal(read.length, size === 1 ? 50 : 3_000, JSON.stringify(end));
      }
    // A value's quoted line ends are its own, within the bound.
    assert.deepEqual(await rows('a,b\n"x\ny",z\n', 'csv', 2, 10, 1_000), [{ a: 'x\ny', b: 'z' }]);
  });

  it('takes the format from the name or type, else from the first line', async () => {
    assert.equal(formatOf('rows.CSV', 'text/plain'), 'csv');
    assert.equal(formatOf('rows.jsonl', 'text/plain'), 'jsonl');
    assert.equal(formatOf('rows.json', 'text/plain'), 'json');
    assert.equal(formatOf('rows', 'application/octet-stream'), undefined);
    assert.deepEqual(await rows('a,b\n1,2'), [{ a: '1', b: '2' }]);
    // A CSV header that begins as JSON could is still a CSV: its first line is no JSON value.
    for (const header of ['name,First Name', '"First Name",x', '2024,2025', 'true,false', 'n']) {
      const keys = header.replaceAll('"', '').split(',');
      const values = keys.map((_, i) => String(i + 1));
      assert.deepEqual(await rows(`${header}\n${values.join(',')}`), [
        Object.fromEntries(keys.map((k, i) => [k, values[i]])),
      ]);
    }
    // A first line that is a JSON value is JSON Lines, whatever the chunks.
    assert.deepEqual(await rows('"hello world"\n12\ntrue'), ['hello world', 12, true]);
    assert.deepEqual(await rows('12'), [12]);
  });

  it('refuses bytes that are no UTF-8 in every format, naming the line, rather than reading U+FFFD', async () => {
    const latin1 = (text: string) => Buffer.from(text, 'latin1'); // "é" is one byte, 0xE9
    const notUtf8 =
      /^RowsError: line 3: the file is not UTF-8 text \(save it as UTF-8: in Excel, "CSV UTF-8"\)$/;
    await assert.rejects(rows(latin1('name,city\nAda,Paris\nZoé,Lyon\n'), 'csv'), notUtf8);
    await assert.rejects(rows(latin1('"a"\n"b"\n"é"\n'), 'jsonl', 4_096), notUtf8);
    await assert.rejects(rows(latin1('[1,\n2,\n"é"]'), undefined, 1), notUtf8);
    // A file cut inside a character.
    await assert.rejects(
      rows(Buffer.from('"a"\n"é"').subarray(0, -2), 'jsonl'),
      /line 2: the file is not UTF-8/,
    );
  });

  it('refuses a JSON row holding a number past ±1.8e308 or an unpaired surrogate, naming where (JSON.parse makes Infinity, later null)', async () => {
    await assert.rejects(
      rows('{"a":1}\n{"a":{"b":[1,-1e999]}}\n'),
      /^RowsError: line 2: `a.b\[1\]` is a number too large to hold \(past ±1\.8e308\)$/,
    );
    await assert.rejects(rows('[1e400]'), /^RowsError: line 1: the row is a number too large/);
    await assert.rejects(
      rows('"ok"\n{"name":"\\ud800x"}'),
      /^RowsError: line 2: `name` holds an unpaired UTF-16 surrogate escape/,
    );
    assert.deepEqual(await rows('{"e":1e308,"s":"\\ud83d\\ude00"}'), [{ e: 1e308, s: '😀' }]);
  });

  it('keeps every CSV column as named: a header naming one twice is refused, `__proto__` is a column, an unnamed one must stay empty', async () => {
    await assert.rejects(
      rows('email,name,email\na@x,A,b@x\n', 'csv'),
      /^RowsError: line 1: the header names the column "email" twice; give each column its own name$/,
    );
    const [row] = (await rows('__proto__,constructor\nx,y\n', 'csv')) as Array<
      Record<string, string>
    >;
    assert.deepEqual(Object.keys(row), ['__proto__', 'constructor']);
    assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')?.value, 'x');
    assert.equal(Object.getPrototypeOf(row), Object.prototype);
    assert.equal(JSON.stringify(row), '{"__proto__":"x","constructor":"y"}');
    // Excel's trailing blank columns: left out while empty, refused where a row fills one.
    assert.deepEqual(await rows('name,city,,\nAda,Paris,,\n', 'csv'), [
      { name: 'Ada', city: 'Paris' },
    ]);
    await assert.rejects(
      rows('name,,city\nAda,,Paris\nBo,42,Lyon\n', 'csv'),
      /^RowsError: line 3: column 2 has no name in the header but a value in this row; name it$/,
    );
  });

  it("hands a failed read of the file to its caller in every format (a CSV's was thrown unhandled: the worker died)", async () => {
    for (const [format, head] of [
      ['csv', 'a,b\n1,2\n'],
      ['jsonl', '1\n2\n'],
      ['json', '[1,2,'],
    ] as const) {
      const failing = (async function* () {
        yield Buffer.from(head);
        throw new Error('connection to the store lost');
      })();
      const read: unknown[] = [];
      await assert.rejects(async () => {
        for await (const row of readRows(failing, format, 10)) read.push(row);
      }, /^Error: connection to the store lost$/);
    }
  });
});
