import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { HookrelayApiError } from '@hookrelay/shared/answer';
import { asText, base64ToBytes, formatBytes, formatTime, formatUtc, hexDump, sha256 } from './format.js';

export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const text = error instanceof HookrelayApiError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** A time in the browser's zone, with the same instant in UTC as its tooltip. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <>—</>;
  return (
    <time dateTime={iso} title={formatUtc(iso)}>
      {formatTime(iso)}
    </time>
  );
}

/** A delivery that went with the server's signature in place of the sender's late one. */
export function ResignedBadge({ when }: { when: boolean | undefined }) {
  if (!when) return null;
  return (
    <span class="badge resigned" title="The sender's signature was too old when it left: the server signed it again with the endpoint's secret">
      re-signed
    </span>
  );
}

export function Loading({ when }: { when: boolean }) {
  return when ? <p class="muted" aria-live="polite">Loading…</p> : null;
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
