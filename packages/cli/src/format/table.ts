import type { Style } from './style.js';
import { padEnd, terminalText, visibleWidth } from './text.js';

export interface Column<Row> {
  header: string;
  /** The cell's plain text; `color` may wrap it afterwards, width is measured without escapes. */
  value: (row: Row) => string;
  color?: (text: string, row: Row, style: Style) => string;
}

const GAP = '  ';

/** An aligned table: a bold header line, then one line per row; the last column is not padded. */
export function formatTable<Row>(columns: readonly Column<Row>[], rows: readonly Row[], style: Style): string {
  // A cell is one line of plain text whatever its row holds.
  const cells = rows.map((row) => columns.map((column) => terminalText(column.value(row))));
  const widths = columns.map((column, index) =>
    Math.max(visibleWidth(column.header), ...cells.map((line) => visibleWidth(line[index] ?? ''))),
  );
  const render = (parts: string[]): string =>
    parts
      .map((part, index) => (index === parts.length - 1 ? part : padEnd(part, widths[index] ?? 0)))
      .join(GAP)
      .trimEnd();
  const header = render(columns.map((column) => style.bold(column.header)));
  const lines = cells.map((line, rowIndex) =>
    render(
      line.map((text, index) => {
        const column = columns[index];
        const row = rows[rowIndex];
        return column?.color !== undefined && row !== undefined ? column.color(text, row, style) : text;
      }),
    ),
  );
  return [header, ...lines].join('\n');
}
