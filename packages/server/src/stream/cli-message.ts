import { INLINE_BODY_MAX_BYTES, LISTEN_PAGE_MAX_BODY_BYTES, type CliMessageOut } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import {
  listInboundMessageHeadsAfter,
  listInboundMessagesAfter,
  listInboundMessagesByIds,
  listInboundMessagesWithPayloadAfter,
  type ListenMessageRow,
} from '../db/inbound-messages.js';
import { matchesFilter, type MessageFilter } from './listen-filter.js';
import { lateSignature, outgoingSignature, type OutgoingSignature, type ResignBody, type SenderSigning } from '../ingest/resign.js';
import { joinHeaders, renderBody } from '../lib/body.js';
import { openPayload, PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';

/** The payload store could not be read: the message goes out with `body_error` rather than not at all. */
export const PAYLOAD_UNAVAILABLE = Symbol('payload unavailable');
/** The message has a stored payload, not read: one above INLINE_BODY_MAX_BYTES goes by reference. */
export const PAYLOAD_STORED = Symbol('payload stored');

/** Whether a message's body travels as `body_url` rather than in the message. */
export const byReference = (row: { size_bytes: number }): boolean => row.size_bytes > INLINE_BODY_MAX_BYTES;

/** A message's share of a page's body budget: a body sent by reference costs the page nothing. */
export const inlineBytes = (row: { size_bytes: number }): number => (byReference(row) ? 0 : row.size_bytes);

/**
 * A message that has just been committed, with its payload bytes in hand: what
 * `StreamHub.publishCommitted` sends without reading it back.
 */
export interface CommittedInboundMessage extends Omit<ListenMessageRow, 'payload_key'> {
  /** Not needed (and may be absent) when the message goes by reference. */
  payload: Uint8Array | undefined;
  /** Its stream frame, when it was rendered while the commit was in flight (`committedFrame`). */
  frame?: string | undefined;
  /** The endpoint's re-signing settings as the ingest read them (null: it has none to judge by). */
  signing?: SenderSigning | null;
}

/** What a message goes with: its bytes, none, or a payload not read (by reference) or unreadable. */
type MessagePayload = Uint8Array | undefined | typeof PAYLOAD_UNAVAILABLE | typeof PAYLOAD_STORED;

/**
 * How a read re-signs its late messages (ingest/resign.ts): the endpoint's settings (null: it is
 * gone), the threshold, and the clock (Date.now by default).
 */
export interface ResignContext {
  signing: SenderSigning | null;
  afterSeconds: number;
  now?: () => number;
}

/** What a CLI message says of a late signature: when it was signed, and whether it goes re-signed or why not. */
function signatureFields(signature: OutgoingSignature | null): Pick<CliMessageOut, 'signed_at' | 'resigned' | 'resign_skipped'> {
  const late = signature?.late;
  if (late === null || late === undefined) return {};
  const signedAt = new Date(late.signedAt * 1000).toISOString();
  if (signature!.resigned) return { signed_at: signedAt, resigned: true };
  return late.skipped === undefined ? { signed_at: signedAt } : { signed_at: signedAt, resign_skipped: late.skipped };
}

const asBuffer = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/**
 * One message as the CLI receives it. `payload` undefined: no body (gone on purpose, or no key).
 * A message above INLINE_BODY_MAX_BYTES that has a payload gets its `body_url` instead, whatever
 * `payload` holds. `forceBase64` keeps bytes exact (always on in stream frames, so the CLI replays
 * the exact bytes).
 */
export function toCliMessage(
  row: Omit<ListenMessageRow, 'payload_key'>,
  payload: MessagePayload,
  forceBase64: boolean,
  signature: OutgoingSignature | null = null,
): CliMessageOut {
  const rawHeaders = signature?.rawHeaders ?? row.raw_headers;
  let body: object = {};
  if (payload !== undefined && byReference(row)) body = { body_url: `/v1/inbound-messages/${row.id}/body` };
  else if (payload === PAYLOAD_UNAVAILABLE) body = { body_error: 'payload_unavailable' as const };
  else if (payload !== undefined && payload !== PAYLOAD_STORED) body = renderBody(asBuffer(payload), row.content_type, forceBase64);
  return {
    message_id: row.id,
    content_type: row.content_type,
    headers: joinHeaders(rawHeaders),
    raw_headers: rawHeaders,
    size_bytes: row.size_bytes,
    payload_sha256: row.payload_sha256,
    received_at: row.received_at.toISOString(),
    method: row.method,
    path: row.path,
    query: row.query,
    event_type: row.event_type,
    ...signatureFields(signature),
    ...(row.replay_of === null ? {} : { replay_of: row.replay_of, edited: true, signed: row.replay_signed === true }),
    ...body,
  } as CliMessageOut;
}

/** A stored body read from its store once more, to re-sign it. */
async function* storedBody(store: PayloadStore, sql: Sql, key: string, size: number): AsyncIterable<Uint8Array> {
  const stream = await openPayload(store, sql, key, size);
  if (stream === undefined) throw new PayloadUnavailableError(`payload ${key} is not stored`);
  yield* stream as AsyncIterable<Uint8Array>;
}

/**
 * Messages as the CLI receives them, `payloads` aligned with `rows`; with `resign`, a late message
 * goes re-signed, its body read again from the store when it travels by reference (a store that
 * cannot be read leaves it as it arrived).
 */
async function renderAll(
  store: PayloadStore,
  sql: Sql,
  rows: readonly ListenMessageRow[],
  payloads: readonly MessagePayload[],
  forceBase64: boolean,
  resign: ResignContext | null,
): Promise<CliMessageOut[]> {
  const nowMs = resign?.now?.() ?? Date.now();
  const messages: CliMessageOut[] = [];
  for (const [i, row] of rows.entries()) {
    const payload = payloads[i];
    const late = resign === null ? null : lateSignature(resign.signing, row, nowMs, resign.afterSeconds);
    let signature: OutgoingSignature | null = null;
    if (late !== null) {
      const body: ResignBody | null =
        payload instanceof Uint8Array ? payload : payload === PAYLOAD_STORED && row.payload_key !== null ? () => storedBody(store, sql, row.payload_key!, row.size_bytes) : null;
      try {
        signature = await outgoingSignature(late, row, body, nowMs);
      } catch (error) {
        if (!(error instanceof PayloadUnavailableError)) throw error;
        signature = await outgoingSignature(late, row, null, nowMs);
      }
    }
    messages.push(toCliMessage(row, payload, forceBase64, signature));
  }
  return messages;
}

/** Messages as the CLI receives them (listen pages and stream frames), inline payloads fetched in one go. */
export async function toCliMessages(
  store: PayloadStore,
  sql: Sql,
  rows: readonly ListenMessageRow[],
  forceBase64: boolean,
  resign: ResignContext | null = null,
): Promise<CliMessageOut[]> {
  const keys = rows.filter((r) => !byReference(r)).map((r) => r.payload_key).filter((k): k is string => k !== null);
  let payloads: Map<string, Buffer> | undefined;
  try {
    payloads = await store.getMany(sql, keys);
  } catch (error) {
    if (!(error instanceof PayloadUnavailableError)) throw error;
  }
  const of = (row: ListenMessageRow): MessagePayload => {
    if (row.payload_key === null) return undefined;
    if (byReference(row)) return PAYLOAD_STORED;
    return payloads === undefined ? PAYLOAD_UNAVAILABLE : payloads.get(row.payload_key);
  };
  return renderAll(store, sql, rows, rows.map(of), forceBase64, resign);
}

/** Messages a filtered read judges per query, and at most per read (a read that matched none moves the cursor on). */
const SCAN_CHUNK = 500;
const MAX_SCANNED = 5000;

export interface CliMessagesRead {
  messages: CliMessageOut[];
  /** The id of the last message read (null when none). */
  lastId: string | null;
  /** The id of the last message considered, sent or skipped by the filter (null when none): where the next read starts. */
  cursor: string | null;
  /** Whether messages after `cursor` may be waiting (the read stopped at its limit). */
  more: boolean;
  /** Each message's stored `traceparent` (docs/operating.md, Tracing), aligned with `messages`. */
  traceContexts: (string | null)[];
}

/**
 * The leading rows whose preceding inline bodies total less than `maxBodyBytes` (so the first
 * always), and whether rows were left out: the rule of `listInboundMessagesWithPayloadAfter`.
 */
function withinBytes<T extends { size_bytes: number }>(rows: readonly T[], maxBodyBytes: number): { kept: T[]; cut: boolean } {
  let bytes = 0;
  let n = 0;
  while (n < rows.length && bytes < maxBodyBytes) bytes += inlineBytes(rows[n++]!);
  return { kept: rows.slice(0, n), cut: n < rows.length };
}

/** What a read may add to its bounds: a filter, another body budget, the re-signing of late messages. */
export interface CliReadOptions {
  filter?: MessageFilter | null;
  /** LISTEN_PAGE_MAX_BODY_BYTES by default. */
  maxBodyBytes?: number;
  /** Without it, every message goes with the headers it arrived with. */
  resign?: ResignContext | null;
}

/**
 * A listen page or a stream read: the endpoint's live messages after `afterId`, in id order, at
 * most `limit`, and no more inline body bytes than `maxBodyBytes` beyond the first message. With the
 * database payload store the payloads come in the same statement; with another store, in one more
 * call. With a filter, the messages are judged by their path and event type first, in chunks, and
 * only those that match are read whole.
 */
export async function readCliMessagesAfter(
  store: PayloadStore,
  sql: Sql,
  endpointId: string,
  afterId: string | null,
  limit: number,
  forceBase64: boolean,
  { filter = null, maxBodyBytes = LISTEN_PAGE_MAX_BODY_BYTES, resign = null }: CliReadOptions = {},
): Promise<CliMessagesRead> {
  if (filter !== null) return readFilteredAfter(store, sql, endpointId, afterId, limit, forceBase64, filter, maxBodyBytes, resign);
  let rows: readonly (ListenMessageRow & { payload?: Uint8Array | null })[];
  let more: boolean;
  if (store.kind === 'database') {
    const read = await listInboundMessagesWithPayloadAfter(sql, endpointId, afterId, limit, maxBodyBytes, INLINE_BODY_MAX_BYTES);
    rows = read.rows;
    more = read.scanned === limit || read.rows.length < read.scanned;
  } else {
    const listed = await listInboundMessagesAfter(sql, endpointId, afterId, limit);
    const { kept, cut } = withinBytes(listed, maxBodyBytes);
    rows = kept;
    more = cut || listed.length === limit;
  }
  const lastId = rows.length > 0 ? rows[rows.length - 1]!.id : null;
  return { messages: await render(store, sql, rows, forceBase64, resign), lastId, cursor: lastId, more, traceContexts: rows.map((r) => r.trace_context) };
}

/**
 * Rows as CLI messages: with the database store their inline payloads came with them (a row with a
 * key but no payload lost it on purpose, deleted meanwhile: no body, as from the store); otherwise
 * they are fetched from the store in one call.
 */
async function render(
  store: PayloadStore,
  sql: Sql,
  rows: readonly (ListenMessageRow & { payload?: Uint8Array | null })[],
  forceBase64: boolean,
  resign: ResignContext | null,
): Promise<CliMessageOut[]> {
  if (store.kind !== 'database') return toCliMessages(store, sql, rows, forceBase64, resign);
  const payloads = rows.map((row): MessagePayload => (row.payload_key === null ? undefined : byReference(row) ? PAYLOAD_STORED : (row.payload ?? undefined)));
  return renderAll(store, sql, rows, payloads, forceBase64, resign);
}

async function readFilteredAfter(
  store: PayloadStore,
  sql: Sql,
  endpointId: string,
  afterId: string | null,
  limit: number,
  forceBase64: boolean,
  filter: MessageFilter,
  maxBodyBytes: number,
  resign: ResignContext | null,
): Promise<CliMessagesRead> {
  const matched: string[] = [];
  let matchedBytes = 0;
  let cursor: string | null = null;
  let scanned = 0;
  let more = false;
  scan: while (scanned < MAX_SCANNED) {
    const heads = await listInboundMessageHeadsAfter(sql, endpointId, cursor ?? afterId, SCAN_CHUNK);
    for (const head of heads) {
      const matches = matchesFilter(filter, head);
      // Once the bodies gathered reach the budget, the next match starts the next read: the cursor stops before it.
      if (matches && matchedBytes >= maxBodyBytes) {
        more = true;
        break scan;
      }
      cursor = head.id;
      scanned++;
      if (matches) {
        matched.push(head.id);
        matchedBytes += inlineBytes(head);
        if (matched.length === limit) {
          more = true;
          break scan;
        }
      }
    }
    more = heads.length === SCAN_CHUNK;
    if (!more) break;
  }
  // A message deleted since it was judged is simply not there: the cursor still passes it.
  const rows = await listInboundMessagesByIds(sql, endpointId, matched, store.kind === 'database' ? INLINE_BODY_MAX_BYTES : null);
  return {
    messages: await render(store, sql, rows, forceBase64, resign),
    lastId: rows.length > 0 ? rows[rows.length - 1]!.id : null,
    cursor,
    more,
    traceContexts: rows.map((r) => r.trace_context),
  };
}
