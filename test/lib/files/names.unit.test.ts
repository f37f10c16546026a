/** File names (lib/files/names.ts): what is stored and what a Content-Disposition header says. */
import assert from 'node:assert/strict';
import { cleanFileName, contentDisposition, servedName } from '../../../lib/files/names';

describe('file names (lib/files/names.ts)', () => {
  it('drops control, bidi and invisible characters, and directories', () => {
    const table: [string, string | undefined][] = [
      ['invoice\u202Egnp.exe', 'invoicegnp.exe'], // RIGHT-TO-LEFT OVERRIDE
      ['a\u2066b\u2069c\u200Ed.png', 'abcd.png'], // isolates, LRM
      ['zero\u200Bwidth\uFEFF.txt', 'zerowidth.txt'],
      ['nul\u0000\u0085\u007f.txt', 'nul.txt'], // C0, C1, DEL
      ['line\u2028break.txt', 'linebreak.txt'],
      ['../../etc/passwd', 'passwd'],
      ['C:\\Users\\x\\"quoted".pdf', 'quoted.pdf'],
      ['Cafe\u0301.txt', 'Café.txt'], // NFC: one spelling
      ['\u202E', undefined],
      ['..', undefined],
    ];
    for (const [raw, clean] of table) assert.equal(cleanFileName(raw), clean, JSON.stringify(raw));
  });

  it('never cuts a surrogate pair in half', () => {
    // 255 code points: the first emoji whole, the second dropped (a UTF-16 cut would leave half of it).
    assert.equal(cleanFileName(`${'a'.repeat(254)}😀😀`), `${'a'.repeat(254)}😀`);
  });

  it('cleans a stored name again for the header, inline or as a download', () => {
    const value = contentDisposition('old\u202Efdp.exe', 'attachment');
    assert.equal(value, `attachment; filename="oldfdp.exe"; filename*=UTF-8''oldfdp.exe`);
    assert.match(
      contentDisposition('Café.png'),
      /^inline; filename="Caf_\.png"; filename\*=UTF-8''Caf%C3%A9\.png$/,
    );
  });

  it('serves a name a saved copy would open as a page with its type’s extension, however it is spelled', () => {
    const table: [string, string][] = [
      ['x.html', 'x.html.pdf'],
      ['invoice.html.', 'invoice.html.pdf'], // saved without its trailing dot
      ['invoice.html . ', 'invoice.html.pdf'],
      ['report.xht', 'report.xht.pdf'],
      ['page.shtm', 'page.shtm.pdf'],
      ['style.xslt', 'style.xslt.pdf'],
      ['x.ht\u200Bml', 'x.html.pdf'], // stored before names were cleaned: cleaned first
      ['report.pdf', 'report.pdf'],
      ['notes.', 'notes.'],
    ];
    for (const [stored, served] of table)
      assert.equal(servedName(stored, 'application/pdf'), served, JSON.stringify(stored));
  });
});
