import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { page, type Query } from './api.js';
import type { PagerProps, TableList } from './resource-table.js';

export interface Loaded<T> {
  value: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Loads with `load` whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ value: T | undefined; error: unknown; loading: boolean }>({ value: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (value) => live && setState({ value, error: undefined, loading: false }),
      (error: unknown) => live && setState({ value: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) };
}

export interface PagedListOptions<T> {
  /** Rows per page (the API's `limit`). */
  limit?: number;
  /**
   * While the first page is shown and the tab is visible, it is read again this often and merged
   * into the rows by `merge` (rows change after they are listed: answers, replays).
   */
  refreshMs?: number;
  /** How a page read again joins the rows shown; by default it replaces them. */
  merge?: (fresh: T[], shown: T[]) => T[];
  /** After each page the list moved to has loaded (not after a refresh). */
  onPage?: () => void;
}

export interface PagedList<T> extends TableList<T> {
  rows: T[] | undefined;
  /** The `meta` of the page shown; undefined before it loaded. */
  meta: Record<string, unknown> | undefined;
  pager: PagerProps;
  /** Whether the first page is shown. */
  atFirst: boolean;
  /** The first page, read again. */
  first: () => void;
  /** The current page, read again. */
  reload: () => void;
  /** Changes the rows shown (rows a live socket announced), the list read so far or none. */
  update: (change: (rows: T[]) => T[]) => void;
}

/**
 * A keyset-paged list of a /v1 path: the page at the cursor, the pager's moves, and the rows as
 * loaded. A `query` different from the last render's (compared as JSON) starts again from the
 * first page.
 */
export function usePagedList<T>(path: string, query: Query = {}, options: PagedListOptions<T> = {}): PagedList<T> {
  const { limit = 50, refreshMs } = options;
  const key = JSON.stringify([path, query, limit]);
  const [at, setAt] = useState<{ key: string; cursor: string | undefined }>({ key, cursor: undefined });
  const cursor = at.key === key ? at.cursor : undefined;
  const [state, setState] = useState<{ rows: T[] | undefined; meta: Record<string, unknown> | undefined; next: string | null; error: unknown; loading: boolean }>({
    rows: undefined,
    meta: undefined,
    next: null,
    error: undefined,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const latest = useRef(options);
  latest.current = options;
  const read = (from: string | undefined) => page<T>(path, { ...query, cursor: from, limit });

  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    read(cursor).then(
      (result) => {
        if (!live) return;
        setState({ rows: result.data, meta: result.meta, next: result.nextCursor, error: undefined, loading: false });
        latest.current.onPage?.();
      },
      (error: unknown) => live && setState({ rows: undefined, meta: undefined, next: null, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [key, cursor, tick]);

  useEffect(() => {
    if (refreshMs === undefined || cursor !== undefined) return;
    let live = true;
    const timer = setInterval(() => {
      if (document.hidden) return;
      read(undefined).then(
        (result) => live && setState((s) => ({ ...s, rows: (latest.current.merge ?? ((fresh: T[]) => fresh))(result.data, s.rows ?? []) })),
        // A refresh that fails changes nothing: the next one, or a move, tries again.
        () => undefined,
      );
    }, refreshMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [key, cursor, refreshMs]);

  const first = () => {
    setAt({ key, cursor: undefined });
    setTick((t) => t + 1);
  };
  return {
    ...state,
    atFirst: cursor === undefined,
    first,
    reload: () => setTick((t) => t + 1),
    update: (change) => setState((s) => ({ ...s, rows: change(s.rows ?? []) })),
    pager: { hasPrevious: cursor !== undefined, next: state.next, onFirst: first, onNext: (next) => setAt({ key, cursor: next }) },
  };
}
