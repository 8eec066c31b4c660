import { createHash } from 'node:crypto';
import { applySampleEdits, type InboundReplayIn, type InboundReplayOut, type ReplayHeaderEdits } from '@hookrelay/shared';
import type { Config } from '../config.js';
import type { Sql } from '../db/database.js';
import { findInboundEndpoint } from '../db/inbound-endpoints.js';
import { findInboundMessage, type InboundMessageRow } from '../db/inbound-messages.js';
import { AppError, invalidRequest, notFound } from '../errors.js';
import type { IngestBatcher, IngestItem } from '../ingest/batcher.js';
import { effectiveBodyLimit } from '../ingest/body-limit.js';
import { copySigningProblem, dropSignatures, setHeader, startCopySigning, type CopySigning } from '../ingest/copy-signing.js';
import { inboundEventType, streamedEventType, type EventTypeRule } from '../ingest/event-type.js';
import { senderSigningOf, type SenderSigning } from '../ingest/resign.js';
import { jsonNestingDepth, MAX_EMBEDDED_JSON_DEPTH } from '../lib/body.js';
import type { SecretBox } from '../security/crypto.js';
import { STREAMED_BODY_MIN_BYTES } from '../storage/blob-store.js';
import { openPayload, PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';

/**
 * Edited replays (docs/api.md, Edited replays): POST /v1/inbound-messages/{id}/replay with edits
 * stores a new message of the same endpoint, the original with its body and headers edited, through
 * the ingest's own group commit, so that it reaches the endpoint's listeners, or its forward URL,
 * exactly as a webhook that arrived would. The original is left as it is.
 */

export interface EditedReplayDeps {
  sql: Sql;
  config: Pick<Config, 'maxBodyBytes' | 'maxIngestBodyBytes'>;
  payloadStore: PayloadStore;
  secretBox: SecretBox;
  /** The process's ingest writer; null without the ingest role. */
  batcher: IngestBatcher | null;
}

const PAUSED_RETRY_AFTER_SECONDS = 60;

const invalid = (path: string, message: string): AppError => invalidRequest(`${path}: ${message}`, [{ path, message }]);

const unavailable = (error: unknown): AppError =>
  new AppError('SERVICE_UNAVAILABLE', 'the payload store is unavailable; retry later', { retryAfterSeconds: 10, cause: error });

/** The lines with each edit made: a string replaces the lines of its name, null removes them. */
function applyHeaderEdits(lines: readonly [string, string][], edits: ReplayHeaderEdits): [string, string][] {
  let out = [...lines];
  for (const [name, value] of Object.entries(edits)) {
    const lower = name.toLowerCase();
    out = value === null ? out.filter(([n]) => n.toLowerCase() !== lower) : setHeader(out, name, value);
  }
  return out;
}

/** The copy's content type: an edit of Content-Type, else the original's. */
function contentTypeOf(original: InboundMessageRow, edits: ReplayHeaderEdits): string {
  const edit = Object.entries(edits).find(([name]) => name.toLowerCase() === 'content-type');
  return edit === undefined ? original.content_type : (edit[1] ?? '');
}

/** A stored body read whole (only for bodies a request could carry). */
async function readWhole(deps: EditedReplayDeps, original: InboundMessageRow): Promise<Buffer> {
  if (original.payload_key === null) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  try {
    const stream = await openPayload(deps.payloadStore, deps.sql, original.payload_key, original.size_bytes);
    if (stream === undefined) throw new AppError('NOT_FOUND', `inbound message ${original.id} has no body to copy`);
    for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  } catch (error) {
    throw error instanceof PayloadUnavailableError ? unavailable(error) : error;
  }
  return Buffer.concat(chunks);
}

/** The original's JSON body with `set` made, as JSON text (the samples' edits and refusals). */
async function editedJson(deps: EditedReplayDeps, original: InboundMessageRow, set: NonNullable<InboundReplayIn['set']>): Promise<Buffer> {
  if (original.size_bytes > deps.config.maxBodyBytes) {
    throw invalid('body.set', `the message's body of ${original.size_bytes} bytes is larger than the ${deps.config.maxBodyBytes} bytes an edit reads: give the new body whole (body)`);
  }
  let text = (await readWhole(deps, original)).toString('utf8');
  if (text.startsWith('\uFEFF')) text = text.slice(1);
  if (jsonNestingDepth(text) > MAX_EMBEDDED_JSON_DEPTH) throw invalid('body.set', `the message's body nests deeper than ${MAX_EMBEDDED_JSON_DEPTH} levels`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid('body.set', "the message's body is not JSON: give the new body whole (body)");
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw invalid('body.set', "the message's body is not a JSON object: give the new body whole (body)");
  try {
    applySampleEdits(json as Parameters<typeof applySampleEdits>[0], set);
  } catch (error) {
    throw invalid('body.set', (error as Error).message);
  }
  return Buffer.from(JSON.stringify(json), 'utf8');
}

/** What the copy's body is: bytes held whole, or the original's stored body copied as it is read. */
type CopyBody = { kind: 'bytes'; bytes: Buffer } | { kind: 'stored'; key: string; size: number };

async function copyBody(deps: EditedReplayDeps, original: InboundMessageRow, edits: InboundReplayIn): Promise<CopyBody> {
  if (edits.body !== undefined) return { kind: 'bytes', bytes: Buffer.from(edits.body, 'utf8') };
  if ((edits.set?.length ?? 0) > 0) return { kind: 'bytes', bytes: await editedJson(deps, original, edits.set!) };
  // The body unchanged: a large one is copied as it streams, never held whole.
  if (original.payload_key !== null && original.size_bytes > STREAMED_BODY_MIN_BYTES && deps.payloadStore.blobs !== undefined) {
    return { kind: 'stored', key: original.payload_key, size: original.size_bytes };
  }
  return { kind: 'bytes', bytes: await readWhole(deps, original) };
}

/** A body held whole, signed and scanned for its event type. */
function fromBytes(bytes: Buffer, signing: CopySigning | null, rule: EventTypeRule, lines: [string, string][]) {
  signing?.update(bytes);
  return { body: bytes, streamed: null, sha256: createHash('sha256').update(bytes).digest('hex'), eventType: inboundEventType(rule, bytes, signing?.preview ?? lines) };
}

/** The original's stored body written to a new blob as it is read: hashed, signed and scanned on the way. */
async function fromStored(deps: EditedReplayDeps, source: { key: string; size: number }, signing: CopySigning | null, rule: EventTypeRule, lines: [string, string][]) {
  const upload = await deps.payloadStore.blobs!.begin();
  const sha = createHash('sha256');
  const scan = streamedEventType(rule, signing?.preview ?? lines);
  try {
    const stream = await openPayload(deps.payloadStore, deps.sql, source.key, source.size);
    if (stream === undefined) throw new AppError('NOT_FOUND', 'the message has no body to copy');
    for await (const piece of stream) {
      const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(piece as Uint8Array);
      sha.update(chunk);
      signing?.update(chunk);
      scan.write(chunk);
      await upload.write(chunk);
    }
    await upload.finish();
  } catch (error) {
    await upload.abort().catch(() => undefined);
    throw error instanceof PayloadUnavailableError ? unavailable(error) : error;
  }
  return {
    body: Buffer.alloc(0),
    streamed: { key: upload.key, size: source.size, abort: () => upload.abort() },
    sha256: sha.digest('hex'),
    eventType: scan.end(),
  };
}

const sizeOf = (body: CopyBody): number => (body.kind === 'bytes' ? body.bytes.length : body.size);

/**
 * Stores the edited copy of message `messageId` and answers it: `edits` must hold an edit
 * (`hasReplayEdits`). Refusals: the message unknown or deleted (404), its endpoint deleted (410) or
 * paused (503), a process without the ingest role (503), `resign` at an endpoint without a secret
 * to sign with, `set` on a body that is not a JSON object (400), a copy over the endpoint's body
 * limit (413).
 */
export async function storeEditedCopy(deps: EditedReplayDeps, projectId: string, messageId: string, edits: InboundReplayIn): Promise<InboundReplayOut> {
  const { sql } = deps;
  const original = await findInboundMessage(sql, projectId, messageId);
  if (!original || original.deleted_at !== null) throw notFound('inbound message', messageId);
  if (deps.batcher === null) {
    throw new AppError('SERVICE_UNAVAILABLE', 'this server process does not ingest (HOOKRELAY_ROLES): send an edited replay to a process with the ingest role');
  }
  const endpoint = await findInboundEndpoint(sql, projectId, original.inbound_endpoint_id);
  if (!endpoint) throw new AppError('GONE', `the inbound endpoint of message ${messageId} has been deleted: an edited copy has nowhere to go`);
  const paused = () => new AppError('ENDPOINT_PAUSED', 'this inbound endpoint is paused; retry later', { retryAfterSeconds: PAUSED_RETRY_AFTER_SECONDS });
  if (endpoint.paused) throw paused();
  const signing: SenderSigning = senderSigningOf(endpoint, endpoint.hmac_secret_encrypted === null ? null : deps.secretBox.decrypt(endpoint.hmac_secret_encrypted));
  const resign = edits.resign === true;
  if (resign) {
    const problem = copySigningProblem(signing);
    if (problem !== null) throw invalid('body.resign', problem);
  }

  const body = await copyBody(deps, original, edits);
  const size = sizeOf(body);
  const limit = effectiveBodyLimit(deps.config, endpoint.max_body_bytes);
  if (size > limit) throw new AppError('PAYLOAD_TOO_LARGE', `the edited copy's body of ${size} bytes is larger than the endpoint's limit of ${limit} bytes`);

  const headerEdits = edits.headers ?? {};
  let lines = applyHeaderEdits(dropSignatures(original.raw_headers, signing, { keepOwn: resign }), headerEdits);
  // The copy's framing is its own body's.
  lines = lines.map(([name, value]): [string, string] => (name.toLowerCase() === 'content-length' ? [name, String(size)] : [name, value]));
  const now = new Date();
  const signer = resign ? startCopySigning(signing, lines, now.getTime()) : null;
  const rule: EventTypeRule = { source: endpoint.event_type_source, path: endpoint.event_type_path };
  const made = body.kind === 'bytes' ? fromBytes(body.bytes, signer, rule, lines) : await fromStored(deps, body, signer, rule, lines);

  const item: IngestItem = {
    endpointId: endpoint.id,
    endpointMode: endpoint.mode,
    projectId,
    method: original.method,
    path: original.path,
    query: original.query,
    contentType: contentTypeOf(original, headerEdits),
    rawHeaders: signer?.headers() ?? lines,
    ...made,
    idempotencyKey: null,
    receivedAt: now,
    // Nothing of the copy came from the sender: no check of the ingest passed on it.
    verified: [],
    signing,
    traceContext: null,
    copyOf: { messageId: original.id, signed: resign },
  };
  const outcome = await deps.batcher.submit(item);
  if (outcome.kind === 'paused') throw paused();
  if (outcome.kind === 'gone') throw new AppError('GONE', `the inbound endpoint of message ${messageId} has been deleted: an edited copy has nowhere to go`);
  return { message_id: outcome.messageId, replay_count: 0, status: 'queued', replay_of: original.id, edited: true, signed: resign };
}
