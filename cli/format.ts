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

/** `key   value` lines with the keys padded to one width. */
export function fields(rows: Array<[string, string]>, indent = '  '): string[] {
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${indent}${k.padEnd(width)}  ${v}`);
}

/** A plain table: a header row and left-aligned columns separated by two spaces. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
