import { Component, type ComponentChildren, type JSX } from 'preact';
import { useRef } from 'preact/hooks';
import { ErrorBox, Loading } from './components.js';

export interface PagerProps {
  hasPrevious: boolean;
  next: string | null;
  onFirst: () => void;
  onNext: (cursor: string) => void;
}

export function Pager({ hasPrevious, next, onFirst, onNext }: PagerProps) {
  if (!hasPrevious && next === null) return null;
  return (
    <nav class="row pager" aria-label="Pages">
      <button type="button" disabled={!hasPrevious} onClick={onFirst}>
        ⇤ Newest
      </button>
      <button type="button" disabled={next === null} onClick={() => next !== null && onNext(next)}>
        Next page →
      </button>
    </nav>
  );
}

/**
 * A table whose rows move focus with ↑/↓ (or j/k), Home/End; Enter follows the row's first link.
 * Rows hold a link in their first cell, so a row is also reachable with Tab.
 */
export function KeyTable({ label, head, children, testid }: { label: string; head: ComponentChildren; children: ComponentChildren; testid?: string | undefined }) {
  const body = useRef<HTMLTableSectionElement>(null);
  const onKeyDown = (event: JSX.TargetedKeyboardEvent<HTMLTableSectionElement>) => {
    const keys: Record<string, number | 'first' | 'last'> = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, Home: 'first', End: 'last' };
    const move = keys[event.key];
    if (move === undefined || !body.current) return;
    const links = Array.from(body.current.querySelectorAll<HTMLElement>('tr > :first-child a, tr > :first-child button'));
    if (links.length === 0) return;
    const current = links.findIndex((link) => link === document.activeElement || link.closest('tr')?.contains(document.activeElement));
    const next = move === 'first' ? 0 : move === 'last' ? links.length - 1 : Math.max(0, Math.min(links.length - 1, (current === -1 ? -1 : current) + move));
    links[next]?.focus();
    event.preventDefault();
  };
  return (
    <table class="list" aria-label={label} data-testid={testid}>
      <thead>{head}</thead>
      <tbody ref={body} onKeyDown={onKeyDown}>
        {children}
      </tbody>
    </table>
  );
}

/**
 * One column: its heading and what a row shows in it. A row renders again only when its record or
 * the columns array changes, so columns whose cells read anything besides the row (a handler, the
 * endpoint's id) are made in the view's render, or memoized on what they read; columns that read
 * only the row are made once, and then a live list renders only its new rows.
 */
export interface Column<T> {
  head: ComponentChildren;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

/** What a table shows: the rows (undefined until loaded), the load's error and state, and a pager for paged lists. */
export interface TableList<T> {
  rows: readonly T[] | undefined;
  error?: unknown;
  /** Shows "Loading…" while there are no rows. */
  loading?: boolean;
  pager?: PagerProps;
}

interface RowProps<T> {
  row: T;
  columns: readonly Column<T>[];
  attributes: ((row: T) => Record<string, string>) | undefined;
}

class TableRow<T> extends Component<RowProps<T>> {
  override shouldComponentUpdate(next: RowProps<T>): boolean {
    return next.row !== this.props.row || next.columns !== this.props.columns || next.attributes !== this.props.attributes;
  }

  override render({ row, columns, attributes }: RowProps<T>) {
    return (
      <tr {...attributes?.(row)}>
        {columns.map((column, i) => (
          <td key={i} class={column.class}>
            {column.cell(row)}
          </td>
        ))}
      </tr>
    );
  }
}

/**
 * A list of API records as a keyboard-driven table: the error (the load's, else `error`), "Loading…"
 * before the first rows, `empty` when the list loaded with none, the rows, and the pager.
 */
export function ResourceTable<T>({
  list,
  label,
  testid,
  columns,
  rowKey,
  rowAttributes,
  empty,
  error,
}: {
  list: TableList<T>;
  label: string;
  testid?: string;
  columns: readonly Column<T>[];
  rowKey: (row: T) => string;
  /** Attributes of a row's `<tr>` (`data-…` ids); made once, like columns that read only the row. */
  rowAttributes?: (row: T) => Record<string, string>;
  empty: ComponentChildren;
  error?: unknown;
}) {
  const { rows } = list;
  const shownError = list.error ?? error;
  return (
    <>
      <ErrorBox error={shownError} />
      <Loading when={list.loading === true && (rows?.length ?? 0) === 0} />
      {rows !== undefined && rows.length === 0 && list.loading !== true && shownError === undefined ? <p class="muted">{empty}</p> : null}
      {rows !== undefined && rows.length > 0 ? (
        <KeyTable
          label={label}
          testid={testid}
          head={
            <tr>
              {columns.map((column, i) => (
                <th key={i} scope="col">
                  {column.head}
                </th>
              ))}
            </tr>
          }
        >
          {rows.map((row) => (
            <TableRow key={rowKey(row)} row={row} columns={columns} attributes={rowAttributes} />
          ))}
        </KeyTable>
      ) : null}
      {list.pager ? <Pager {...list.pager} /> : null}
    </>
  );
}
