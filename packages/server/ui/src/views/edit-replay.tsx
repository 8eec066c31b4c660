import { useMemo, useState } from 'preact/hooks';
import type { InboundEndpointOut, InboundMessageOut, InboundReplayOut } from '@hookrelay/shared';
import { replayHeaderEditProblem } from '@hookrelay/shared/constants';
import { api } from '../api.js';
import { ErrorBox } from '../components.js';
import { asText, base64ToBytes, indentJson } from '../format.js';
import { replayEdits, type HeaderRow } from '../replay-edits.js';

/** The body as the editor starts with it: JSON laid out from its own text, other text as it is; null when not text in the page. */
function editableBody(message: InboundMessageOut): { text: string; json: boolean } | null {
  if (typeof message.body !== 'string' || message.body_encoding !== 'base64') return null;
  const text = asText(base64ToBytes(message.body));
  if (text === null) return null;
  const json = indentJson(text);
  return json === null ? { text, json: false } : { text: json, json: true };
}

/** One row of the header table; the lines no edit may change (framing, hop-by-hop) are shown, not edited. */
function HeaderLine({ row, index, onChange, onRemove }: { row: HeaderRow; index: number; onChange: (row: HeaderRow) => void; onRemove: () => void }) {
  const fixed = row.name === '' ? null : replayHeaderEditProblem(row.name);
  return (
    <tr>
      <td>
        <input aria-label={`Header ${index + 1} name`} value={row.name} readOnly={fixed !== null} onInput={(e) => onChange({ ...row, name: e.currentTarget.value })} />
      </td>
      <td>
        <input aria-label={`Header ${index + 1} value`} value={row.value} readOnly={fixed !== null} title={fixed ?? undefined} onInput={(e) => onChange({ ...row, value: e.currentTarget.value })} />
      </td>
      <td>
        {fixed === null ? (
          <button type="button" class="small" aria-label={`Remove header ${row.name || index + 1}`} onClick={onRemove}>
            Remove
          </button>
        ) : (
          <span class="muted">{fixed}</span>
        )}
      </td>
    </tr>
  );
}

/**
 * "Edit and replay": the body in an editor (checked as JSON when it is JSON), the header lines in a
 * table, and re-signing; sends only what changed, so the server makes an edited copy of the message
 * (a new message of the endpoint, `replay_of` this one).
 */
export function EditAndReplay({ message, endpoint }: { message: InboundMessageOut; endpoint: InboundEndpointOut }) {
  const initial = useMemo(() => editableBody(message), [message.id, message.body]);
  const [open, setOpen] = useState(false);
  const [body, setBody] = useState(initial?.text ?? '');
  const [rows, setRows] = useState<HeaderRow[]>(() => message.raw_headers.map(([name, value]) => ({ name, value })));
  const [resign, setResign] = useState(endpoint.verify_hmac === true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [copy, setCopy] = useState<InboundReplayOut | null>(null);
  const outcome = replayEdits({ originalHeaders: message.raw_headers, rows, initialBody: initial?.text ?? null, body, json: initial?.json === true, resign });

  const submit = async (event: Event) => {
    event.preventDefault();
    if (outcome.edits === null) return;
    setError(undefined);
    setBusy(true);
    try {
      const { data } = await api<InboundReplayOut>('POST', `/v1/inbound-messages/${message.id}/replay`, { body: outcome.edits });
      setCopy(data);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const setRow = (i: number, row: HeaderRow) => setRows(rows.map((old, j) => (j === i ? row : old)));

  return (
    <>
      <button type="button" aria-expanded={open} aria-controls="edit-replay" onClick={() => setOpen(!open)} disabled={message.deleted_at !== undefined}>
        Edit and replay
      </button>
      {open ? (
        <form id="edit-replay" class="panel edit-replay" aria-label="Edit and replay" onSubmit={submit}>
          <p class="meta-line">
            Makes an edited copy: a new message of this endpoint with the changes below, sent {endpoint.mode === 'forward' ? 'to the forward URL' : 'to connected listeners'}. This message stays as it is.
          </p>
          <h3>
            <label for="edit-body">Body{initial?.json ? ' (JSON)' : ''}</label>
          </h3>
          {initial ? (
            <textarea id="edit-body" class="body-editor" rows={Math.min(24, Math.max(4, body.split('\n').length + 1))} spellcheck={false} value={body} onInput={(e) => setBody(e.currentTarget.value)} />
          ) : (
            <p class="muted" id="edit-body">
              This body is not text shown in the page (binary, or larger than 256 KiB): the copy keeps it as it is.
            </p>
          )}
          <h3>Headers</h3>
          <table class="headers edit-headers" aria-label="Headers of the copy">
            <tbody>
              {rows.map((row, i) => (
                <HeaderLine key={i} row={row} index={i} onChange={(next) => setRow(i, next)} onRemove={() => setRows(rows.filter((_, j) => j !== i))} />
              ))}
            </tbody>
          </table>
          <div class="row wrap">
            <button type="button" class="small" onClick={() => setRows([...rows, { name: '', value: '' }])}>
              Add a header
            </button>
            <label class="inline">
              <input type="checkbox" checked={resign} onChange={(e) => setResign(e.currentTarget.checked)} /> Sign the copy with the endpoint's HMAC secret
              {endpoint.verify_hmac ? ` (${endpoint.hmac_scheme})` : ''}
            </label>
          </div>
          <p class="muted">
            {resign
              ? 'Signed as the sender signs: the signature headers are written for the edited bytes.'
              : "Unsigned: the original's signature headers are dropped (they would not match the edited bytes)."}
          </p>
          <p class={outcome.problem === null ? 'muted' : 'error'} aria-live="polite" data-testid="edit-state">
            {outcome.problem ?? (outcome.edits === null ? 'Nothing edited yet: Replay sends the message as it came.' : `Edits: ${[outcome.edits.body !== undefined ? 'the body' : '', ...Object.keys(outcome.edits.headers ?? {})].filter(Boolean).join(', ')}.`)}
          </p>
          <div class="row">
            <button type="submit" disabled={busy || outcome.edits === null}>
              Replay the edited copy
            </button>
            {copy?.edited ? (
              <span role="status">
                Edited copy sent ({copy.signed ? 'signed' : 'unsigned'}):{' '}
                <a href={`#/inbound-messages/${copy.message_id}`} data-testid="edited-copy">
                  {copy.message_id}
                </a>
              </span>
            ) : null}
          </div>
          <ErrorBox error={error} />
        </form>
      ) : null}
    </>
  );
}
