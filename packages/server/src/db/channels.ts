/**
 * The NOTIFY channels processes sharing one database hear each other on (PostgreSQL LISTEN/NOTIFY;
 * in-process on PGlite). A notice is only a wake-up: what it announces is committed before it is
 * sent, and a listener that missed notices reads its state again (`Database.listen`'s
 * `onResubscribed`). The stored SQL (the delivery triggers of the migrations, the functions in
 * packages/server/sql/) names some of these channels; a test holds those names equal to the ones here.
 */

/**
 * Deliveries became due: new or resumed jobs (also sent by the delivery triggers and the ingest
 * functions). Payload: the id of the worker the enqueue leased its messages to (that worker was
 * woken directly), or empty.
 */
export const DELIVERIES_CHANNEL = 'hookrelay_deliveries';

/** New inbound messages were committed. Payload: `<endpoint id>:<last id committed>`, comma-separated. */
export const INBOUND_MESSAGES_CHANNEL = 'hookrelay_inbound_messages';

/**
 * Cli-mode messages were replayed. Payload: `<endpoint id>:<message id>`, or several message ids
 * each after a colon (`<endpoint id>:<id>:<id>…`), in the order they are pushed.
 */
export const INBOUND_REPLAY_CHANNEL = 'hookrelay_inbound_replay';

/** An inbound endpoint's settings or state changed, so cached ingest settings are dropped. Payload: its id. */
export const INBOUND_ENDPOINT_CHANGED_CHANNEL = 'hookrelay_inbound_endpoint_changed';

/** A bulk job was created and waits for a worker. Payload: empty. */
export const BULK_JOBS_CHANNEL = 'hookrelay_bulk_jobs';

/**
 * An API key was revoked: every process closes the WebSockets opened with it (REST needs no notice,
 * since every request reads the key). Payload: its id.
 */
export const API_KEY_REVOKED_CHANNEL = 'hookrelay_api_key_revoked';

/**
 * A portal link was revoked: every process closes the portal sockets opened with it. Payload: its id.
 */
export const PORTAL_LINK_REVOKED_CHANNEL = 'hookrelay_portal_link_revoked';

/**
 * Requests refused at ingest URLs were stored. Payload: `<endpoint id>:<rejection id>`,
 * comma-separated (a batch's notices are cut to stay under NOTIFY's payload limit).
 */
export const INGEST_REJECTIONS_CHANNEL = 'hookrelay_ingest_rejections';

export const CHANNELS: readonly string[] = [
  DELIVERIES_CHANNEL,
  INBOUND_MESSAGES_CHANNEL,
  INBOUND_REPLAY_CHANNEL,
  INBOUND_ENDPOINT_CHANGED_CHANNEL,
  API_KEY_REVOKED_CHANNEL,
  PORTAL_LINK_REVOKED_CHANNEL,
  INGEST_REJECTIONS_CHANNEL,
  BULK_JOBS_CHANNEL,
];

/** One endpoint's entry of an INBOUND_MESSAGES_CHANNEL notice (several join with commas). */
export function inboundCommitEntry(endpointId: string, lastId: string): string {
  return `${endpointId}:${lastId}`;
}

/** Reads an INBOUND_MESSAGES_CHANNEL notice: each endpoint, with its last id committed when the entry names it. */
export function readInboundCommits(payload: string, each: (endpointId: string, lastId: string | undefined) => void): void {
  for (const entry of payload.split(',')) {
    const [endpointId, lastId] = entry.split(':');
    if (endpointId) each(endpointId, lastId || undefined);
  }
}

/** The INBOUND_REPLAY_CHANNEL notice of a replayed message. */
export function replayNotice(endpointId: string, messageId: string): string {
  return `${endpointId}:${messageId}`;
}

/** Message ids per INBOUND_REPLAY_CHANNEL notice: 37 bytes each, well under NOTIFY's 8,000-byte payload. */
const REPLAYS_PER_NOTICE = 100;

/** The INBOUND_REPLAY_CHANNEL notices of messages of one endpoint replayed together, in their order. */
export function replayNotices(endpointId: string, messageIds: readonly string[]): string[] {
  const notices: string[] = [];
  for (let i = 0; i < messageIds.length; i += REPLAYS_PER_NOTICE) notices.push([endpointId, ...messageIds.slice(i, i + REPLAYS_PER_NOTICE)].join(':'));
  return notices;
}

/** Reads an INBOUND_REPLAY_CHANNEL notice; undefined when it does not name an endpoint and a message. */
export function readReplayNotice(payload: string): { endpointId: string; messageIds: string[] } | undefined {
  const [endpointId, ...messageIds] = payload.split(':');
  const ids = messageIds.filter((id) => id !== '');
  return endpointId && ids.length > 0 ? { endpointId, messageIds: ids } : undefined;
}

/** Entries of INGEST_REJECTIONS_CHANNEL per notice: well under NOTIFY's 8,000-byte payload. */
const REJECTIONS_PER_NOTICE = 100;

/** The INGEST_REJECTIONS_CHANNEL notices of stored refused requests. */
export function rejectionNotices(rejections: readonly { endpointId: string; id: string }[]): string[] {
  const notices: string[] = [];
  for (let i = 0; i < rejections.length; i += REJECTIONS_PER_NOTICE) {
    notices.push(rejections.slice(i, i + REJECTIONS_PER_NOTICE).map((r) => `${r.endpointId}:${r.id}`).join(','));
  }
  return notices;
}

/** Reads an INGEST_REJECTIONS_CHANNEL notice: the refused requests' ids, by endpoint. */
export function readRejectionNotice(payload: string): Map<string, string[]> {
  const byEndpoint = new Map<string, string[]>();
  for (const entry of payload.split(',')) {
    const [endpointId, id] = entry.split(':');
    if (!endpointId || !id) continue;
    const ids = byEndpoint.get(endpointId) ?? [];
    ids.push(id);
    byEndpoint.set(endpointId, ids);
  }
  return byEndpoint;
}
