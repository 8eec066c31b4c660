import { shellQuote, terminalText } from './format/text.js';

/** `--json` output of a list command: the rows and the cursor of the next page (null on the last). */
export interface ListResult<T> {
  data: T[];
  next_cursor: string | null;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** A cursor the server keeps answering would loop for ever; no list is anywhere near this long. */
export const MAX_PAGES = 100_000;

/**
 * `--all`: every page from `cursor` on, in the server's order, until a page has no next cursor.
 * `onPage` sees each page as it arrives (to print as it goes).
 */
export async function collectAllPages<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  options: { cursor?: string | undefined; onPage?: (rows: readonly T[]) => void } = {},
): Promise<T[]> {
  const rows: T[] = [];
  let cursor = options.cursor;
  const seen = new Set<string>();
  for (let pages = 0; pages < MAX_PAGES; pages += 1) {
    const page = await fetchPage(cursor);
    rows.push(...page.data);
    options.onPage?.(page.data);
    if (page.nextCursor === null || page.data.length === 0) return rows;
    if (seen.has(page.nextCursor)) throw new Error(`the server answered the cursor ${page.nextCursor} twice; stopping to avoid a loop`);
    seen.add(page.nextCursor);
    cursor = page.nextCursor;
  }
  throw new Error(`more than ${MAX_PAGES} pages; stopping`);
}

/** The stderr hint of a list with a next page: the same command with `--cursor`, ready to paste. */
export function nextPageHint(command: string, extraArgs: readonly string[], cursor: string): string {
  // The cursor is the server's: quoted for the shell, escaped for the terminal.
  return terminalText([command, ...extraArgs.map(shellQuote), '--cursor', shellQuote(cursor)].join(' '));
}
