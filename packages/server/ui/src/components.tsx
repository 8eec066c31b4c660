import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { HookrelayApiError } from '@hookrelay/shared/answer';
import type { AttemptOut } from '@hookrelay/shared';
import { asText, base64ToBytes, formatBytes, formatMs, formatTime, hexDump, sha256, statusClass } from './format.js';

/** Loads with `load` whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { value: T | undefined; error: unknown; loading: boolean; reload: () => void } {
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

export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const text = error instanceof HookrelayApiError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** What a list shows besides its rows: the error, "Loading…" before the first page, or why it is empty. */
export function ListState({ list, error, empty }: { list: { value: { data: unknown[] } | undefined; error: unknown; loading: boolean }; error?: unknown; empty: string }) {
  return (
    <>
      <ErrorBox error={list.error ?? error} />
      <Loading when={list.loading && !list.value} />
      {list.value && list.value.data.length === 0 ? <p class="muted">{empty}</p> : null}
    </>
  );
}

export function Loading({ when }: { when: boolean }) {
  return when ? <p class="muted" aria-live="polite">Loading…</p> : null;
}

/**
 * A table whose rows move focus with ↑/↓ (or j/k), Home/End; Enter follows the row's first link.
 * Rows hold a link in their first cell, so a row is also reachable with Tab.
 */
export function KeyTable({ label, head, children, testid }: { label: string; head: ComponentChildren; children: ComponentChildren; testid?: string }) {
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

export function CopyButton({ text, label }: { text: () => string | Promise<string>; label: string }) {
  const [done, setDone] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(await text());
      setDone('Copied');
    } catch {
      setDone('Copy failed: select the text instead');
    }
    setTimeout(() => setDone(null), 2000);
  };
  return (
    <button type="button" class="small" onClick={copy} aria-label={label}>
      {done ?? 'Copy'}
    </button>
  );
}

/** A confirmation in a modal <dialog> (never window.confirm). */
export function ConfirmButton({ label, question, confirm, onConfirm, danger = true }: { label: string; question: string; confirm: string; onConfirm: () => void; danger?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button type="button" class={danger ? 'small danger' : 'small'} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-label={question}>
        <p>{question}</p>
        <div class="row">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            class={danger ? 'danger' : ''}
            onClick={() => {
              dialog.current?.close();
              onConfirm();
            }}
          >
            {confirm}
          </button>
        </div>
      </dialog>
    </>
  );
}

export function Pager({ hasPrevious, next, onFirst, onNext }: { hasPrevious: boolean; next: string | null; onFirst: () => void; onNext: (cursor: string) => void }) {
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

/** Name/value lines in their order, repeats kept: header lines as received, form fields. */
function PairsTable({ pairs, label, testid }: { pairs: readonly [string, string][]; label: string; testid?: string }) {
  return (
    <table class="headers" aria-label={label} data-testid={testid}>
      <tbody>
        {pairs.map(([name, value], i) => (
          <tr key={i}>
            <th scope="row">{name}</th>
            <td>{value}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Headers exactly as received: in order, repeats kept, names as sent. */
export function HeadersTable({ headers, label, testid = 'headers' }: { headers: readonly [string, string][]; label: string; testid?: string }) {
  if (headers.length === 0) return <p class="muted">No headers.</p>;
  return <PairsTable pairs={headers} label={label} testid={testid} />;
}

/** Delivery attempts (or CLI reports), oldest first, with each answer's status, latency and body. */
export function AttemptsTable({ attempts, testid }: { attempts: readonly AttemptOut[]; testid: string }) {
  if (attempts.length === 0) return <p class="muted">No attempt yet.</p>;
  return (
    <KeyTable
      label="Attempts"
      testid={testid}
      head={
        <tr>
          <th scope="col">#</th>
          <th scope="col">Started</th>
          <th scope="col">Status</th>
          <th scope="col">Latency</th>
          <th scope="col">Error</th>
          <th scope="col">Response body</th>
        </tr>
      }
    >
      {attempts.map((attempt) => (
        <tr key={attempt.id}>
          <td class="num">{attempt.attempt_number}</td>
          <td class="nowrap">{formatTime(attempt.started_at)}</td>
          <td>
            <span class={`badge ${statusClass(attempt.response_status)}`}>{attempt.response_status ?? 'none'}</span>
          </td>
          <td class="num">{formatMs(attempt.latency_ms)}</td>
          <td class="error-text">{attempt.error ?? ''}</td>
          <td>
            <pre class="inline-body">{attempt.response_body ?? ''}</pre>
          </td>
        </tr>
      ))}
    </KeyTable>
  );
}

/** A JSON value as a tree of <details>: every object and array folds. */
export function JsonTree({ value, name, depth = 0 }: { value: unknown; name?: string; depth?: number }) {
  const label = name === undefined ? null : <span class="json-key">{JSON.stringify(name)}: </span>;
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
    if (entries.length === 0) return <div class="json-line">{label}{open + close}</div>;
    return (
      <details open={depth < 3} class="json-node">
        <summary>
          {label}
          {open}
          <span class="muted"> {entries.length} {Array.isArray(value) ? 'items' : 'keys'} </span>
        </summary>
        <div class="json-children">
          {entries.map(([key, child]) => (
            <JsonTree key={key} value={child} name={Array.isArray(value) ? undefined : key} depth={depth + 1} />
          ))}
        </div>
        <div class="json-line">{close}</div>
      </details>
    );
  }
  return (
    <div class="json-line">
      {label}
      <span class={`json-${value === null ? 'null' : typeof value}`}>{JSON.stringify(value)}</span>
    </div>
  );
}

type BodyKind = 'json' | 'form' | 'text' | 'binary';

function detect(bytes: Uint8Array, contentType: string): { kind: BodyKind; text: string | null; json?: unknown } {
  const text = asText(bytes);
  if (text === null) return { kind: 'binary', text };
  const type = contentType.toLowerCase();
  if (type.includes('json') || /^\s*[[{]/.test(text)) {
    try {
      return { kind: 'json', text, json: JSON.parse(text) };
    } catch {
      // Not JSON after all: shown as text.
    }
  }
  if (type.includes('application/x-www-form-urlencoded')) return { kind: 'form', text };
  return { kind: 'text', text };
}

/**
 * A body from its base64 bytes: pretty JSON (foldable), form fields, text, or a hex dump; with its
 * size and SHA-256 (computed here, and compared with the stored one).
 */
export function BodyView({ base64, contentType, storedSha256 }: { base64: string; contentType: string; storedSha256: string }) {
  const bytes = base64ToBytes(base64);
  const detected = detect(bytes, contentType);
  const [raw, setRaw] = useState(false);
  const [digest, setDigest] = useState<string | null | undefined>(undefined);
  useEffect(() => {
    void sha256(bytes).then(setDigest);
  }, [base64]);
  let view: ComponentChildren;
  if (raw || detected.kind === 'text') view = <pre class="body">{detected.text}</pre>;
  else if (detected.kind === 'binary') view = <pre class="body hexdump">{hexDump(bytes)}</pre>;
  else if (detected.kind === 'json') view = <div class="body json">{<JsonTree value={detected.json} />}</div>;
  else
    view = <PairsTable pairs={Array.from(new URLSearchParams(detected.text ?? ''))} label="Form fields" />;
  return (
    <section aria-label="Body" data-testid="body">
      <p class="meta-line">
        <span data-testid="body-size">{formatBytes(bytes.length)}</span>
        {' · '}
        {detected.kind === 'binary' ? 'binary (hex dump)' : detected.kind === 'form' ? 'form fields' : detected.kind === 'json' ? 'JSON' : 'text'}
        {' · SHA-256 '}
        <code data-testid="body-sha256">{digest ?? storedSha256}</code>
        {digest === undefined ? null : digest === null ? <span class="muted"> (stored; this page cannot hash without a secure context)</span> : digest === storedSha256 ? <span class="ok"> ✓ matches the stored hash</span> : <span class="error"> ✗ differs from the stored {storedSha256}</span>}
        {detected.kind === 'json' || detected.kind === 'form' ? (
          <label class="inline">
            <input type="checkbox" checked={raw} onChange={(e) => setRaw(e.currentTarget.checked)} /> raw
          </label>
        ) : null}
      </p>
      {view}
    </section>
  );
}
