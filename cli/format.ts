/** Small text helpers for the operator CLI's human-readable output. */

/** `$10.00`, `-$0.001`, `$9.999`: at least two decimals, up to six, no float noise. */
export function formatUsd(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) return '-';
  const sign = amount < 0 ? '-' : '';
  let text = Math.abs(amount).toFixed(6).replace(/0+$/, '');
  const decimals = text.length - text.indexOf('.') - 1;
  if (decimals < 2) text += '0'.repeat(2 - decimals);
  return `${sign}$${text}`;
}

/** ISO 8601 in UTC, or `-`. */
export function formatDate(date: Date | null | undefined): string {
  return date ? date.toISOString() : '-';
}

/** `key   value` lines with the keys padded to one width; a value stays on its line. */
export function fields(rows: Array<[string, string]>, indent = '  '): string[] {
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${indent}${k.padEnd(width)}  ${oneLine(v)}`);
}

/** A value that cannot start a line of its own (which could pass for one the CLI printed). */
function oneLine(value: string): string {
  return value.replace(/\r?\n/g, '\\n');
}

/**
 * `text` as a terminal may show it: control and format characters (ESC and the sequences it
 * starts, C1 controls, bidi overrides, line separators) written as `\uXXXX`, newlines and tabs
 * kept. Tenants' words reach the operator's screen (a run's error quotes a remote server, a file's
 * line), and raw they could retitle the window, write the clipboard or forge the lines around them.
 * Inside JSON the escapes read back as the same string.
 */
export function terminalSafe(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) =>
    c === '\n' || c === '\t'
      ? c
      : Array.from(
          { length: c.length },
          (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`,
        ).join(''),
  );
}

/** A plain table: a header row and left-aligned columns separated by two spaces. */
export function table(header: string[], rows: string[][]): string[] {
  // A loop, not Math.max(...rows): a ledger of 150,000 entries would overflow the stack.
  rows = rows.map((row) => row.map(oneLine));
  const widths = header.map((h) => h.length);
  for (const row of rows)
    row.forEach((cell, i) => {
      if (i < widths.length) widths[i] = Math.max(widths[i], cell.length);
    });
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
