import type { Sql } from './database.js';
import type { DeliveryStatus } from './deliveries.js';
import { subscribedEndpointIds, subscriptionKeysOf } from './endpoint-subscriptions.js';
import { newestFirstById, timeWindow } from './keyset.js';
import {
  byteaText,
  notifiedRows,
  queueDeliveries,
  withLeasedEndpoints,
  type EnqueueLease,
  type LeaseAtInsert,
  type LeasedEndpointRow,
  type SubmittedPayload,
  type SubmittedPayloadColumns,
} from './messages.js';
import { liveEndpoint } from './soft-delete.js';

/** Events and their fan-out into outbound messages (migrations/021). One function per operation, `sql` first. */

export interface EventRow extends SubmittedPayloadColumns {
  id: string;
  project_id: string;
  event_type: string;
  owner_id: string | null;
  channels: string[];
  payload_key: string;
  message_count: number;
  created_at: Date;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  ev.id, ev.project_id, ev.event_type, ev.owner_id, ev.channels, ev.idempotency_key, ev.request_sha256, ev.payload_format,
  ev.content_type, ev.size_bytes, ev.payload_sha256, ev.payload_key, ev.message_count, ev.created_at`;

/** A validated event to fan out. */
export interface NewEvent extends SubmittedPayload {
  id: string;
  projectId: string;
  eventType: string;
  ownerId: string | null;
  channels: string[];
}

/** A message the fan-out made (`position`: index of its event in the batch). */
export interface FannedOutMessage extends LeaseAtInsert {
  position: number;
  id: string;
  endpoint_id: string;
}

/** The event that held an idempotency key before this fan-out (a repeat answers it). */
export interface EventHolder extends Pick<EventRow, 'id' | 'project_id' | 'event_type' | 'owner_id' | 'channels' | 'created_at' | 'request_sha256'> {
  idempotency_key: string;
  /** Its messages, oldest first, when a submission of the batch repeats its request; else empty. */
  messages: { id: string; endpoint_id: string }[];
}

export interface FanOutResult {
  /** The ids of the events stored. */
  stored: Set<string>;
  messages: FannedOutMessage[];
  holders: EventHolder[];
}

/**
 * Stores a batch of events and fans each out, in one statement whose text is the same for every
 * batch: the events, their payloads (inline ones), one outbound message and job for each live
 * endpoint of its project whose owner is the event's, whose subscriptions take its type and whose
 * channels admit it (paused endpoints included: the claim parks their jobs), and one NOTIFY when a
 * job waits for a claim. An event is stored without an idempotency key, or with one that no event
 * created after `since` holds when it is the first of the batch with that key; the caller tells the
 * other outcomes apart from the stored events and the holders. Concurrent batches with keys must
 * hold lockIdempotencyKeys.
 *
 * Each event's endpoints are found by the subscription index and then looked up by primary key,
 * and its messages are written by set, whatever their number: every step is a lookup per row of the
 * step before, so that no estimate — a plan cached for a batch of a few rows, statistics older than
 * a thousand new endpoints — makes it compare every endpoint with every subscription. The messages'
 * ids follow their event's (`hookrelay_uuidv7_after`), in the order of their endpoints' ids, so
 * they are unique without a round trip. Up to `lease.slots` messages of endpoints neither paused nor
 * rate-limited are leased to `lease.workerId` at insert, the batch's earlier events first.
 */
export async function fanOutEvents(
  sql: Sql,
  events: readonly NewEvent[],
  options: { since: Date; lease: EnqueueLease | undefined; origin: string },
): Promise<FanOutResult> {
  const column = <T>(pick: (e: NewEvent) => T) => events.map(pick);
  const keys = column((e) => subscriptionKeysOf(e));
  type Row =
    | (FannedOutMessage & { source: 'message' })
    | { source: 'event'; id: string }
    | (LeasedEndpointRow & { source: 'endpoint' })
    | (Omit<EventHolder, 'messages'> & { source: 'held' })
    | { source: 'held_message'; id: string; endpoint_id: string; event_id: string };
  const rows = await sql<Row>`
    WITH input AS (
      SELECT x.position::int - 1 AS position, x.id, x.project_id, x.event_type, x.owner_id, x.owner_key,
             x.channels::text[] AS channels, x.prefixes::text[] AS prefixes, x.reserved,
             x.idempotency_key, x.request_sha256, x.payload_format, x.content_type, x.size_bytes, x.payload_sha256, x.payload_key,
             x.created_at, x.payload
      FROM unnest(${column((e) => e.id)}::uuid[], ${column((e) => e.projectId)}::uuid[], ${column((e) => e.eventType)}::text[],
                  ${column((e) => e.ownerId)}::text[], ${keys.map((k) => k.ownerKey)}::text[], ${column((e) => textArray(e.channels))}::text[],
                  ${keys.map((k) => textArray(k.prefixes))}::text[], ${keys.map((k) => String(k.reserved))}::text[]::boolean[],
                  ${column((e) => e.idempotencyKey)}::text[], ${column((e) => e.requestSha256)}::text[], ${column((e) => e.payloadFormat)}::text[],
                  ${column((e) => e.contentType)}::text[], ${column((e) => e.sizeBytes)}::int[], ${column((e) => e.payloadSha256)}::text[],
                  ${column((e) => e.payloadKey)}::text[], ${column((e) => e.createdAt.toISOString())}::text[]::timestamptz[],
                  ${column((e) => byteaText(e.inlinePayload))}::text[]::bytea[])
           WITH ORDINALITY AS x (id, project_id, event_type, owner_id, owner_key, channels, prefixes, reserved, idempotency_key, request_sha256,
                                 payload_format, content_type, size_bytes, payload_sha256, payload_key, created_at, payload, position)
    ), held AS (
      SELECT k.project_id, k.idempotency_key, h.id, h.event_type, h.owner_id, h.channels, h.created_at, h.request_sha256
      FROM (SELECT DISTINCT project_id, idempotency_key FROM input WHERE idempotency_key IS NOT NULL) AS k
      CROSS JOIN LATERAL (
        SELECT ev.id, ev.event_type, ev.owner_id, ev.channels, ev.created_at, ev.request_sha256 FROM events ev
        WHERE ev.project_id = k.project_id AND ev.idempotency_key = k.idempotency_key AND ev.created_at > ${options.since.toISOString()}::text::timestamptz
        ORDER BY ev.created_at DESC LIMIT 1
      ) AS h
    ), fanned AS (
      SELECT i.* FROM (SELECT i.*, row_number() OVER (PARTITION BY i.project_id, i.idempotency_key ORDER BY i.position) AS key_rank FROM input i) AS i
      WHERE i.idempotency_key IS NULL
         OR (i.key_rank = 1 AND NOT EXISTS (SELECT 1 FROM held h WHERE h.project_id = i.project_id AND h.idempotency_key = i.idempotency_key))
    ), matched AS (
      -- An event no endpoint takes keeps one row, with no endpoint: it is stored all the same.
      SELECT f.position, f.id AS event_id, f.project_id, f.event_type, f.owner_id, f.channels, f.idempotency_key, f.request_sha256,
             f.payload_format, f.content_type, f.size_bytes, f.payload_sha256, f.payload_key, f.created_at, r.endpoint_id, r.direct,
             row_number() OVER (PARTITION BY f.position ORDER BY r.endpoint_id) AS n,
             count(r.endpoint_id) OVER (PARTITION BY f.position) AS message_count,
             -- In the order of n, so that one sort serves every window.
             count(*) FILTER (WHERE r.direct) OVER (ORDER BY f.position, r.endpoint_id) AS direct_rank
      FROM fanned f
      LEFT JOIN LATERAL (
        SELECT e.id AS endpoint_id, (NOT e.paused AND e.rate_limit_rps = 0) AS direct
        FROM (${subscribedEndpointIds(sql)}) AS s
        -- A primary-key lookup per subscribed endpoint: OFFSET 0 keeps the conditions below out of
        -- the subquery, which would let a plan made with old statistics scan the project's
        -- endpoints (an index on project_id) once per subscription instead.
        CROSS JOIN LATERAL (SELECT e.* FROM endpoints e WHERE e.id = s.endpoint_id OFFSET 0) AS e
        WHERE e.project_id = f.project_id AND ${liveEndpoint('e')} AND (e.channels IS NULL OR e.channels && f.channels)
      ) AS r ON true
    ), stored_events AS (
      INSERT INTO events (id, project_id, event_type, owner_id, channels, idempotency_key, request_sha256, payload_format,
                          content_type, size_bytes, payload_sha256, payload_key, message_count, created_at)
      SELECT event_id, project_id, event_type, owner_id, channels, idempotency_key, request_sha256, payload_format,
             content_type, size_bytes, payload_sha256, payload_key, message_count, created_at
      FROM matched WHERE n = 1
      RETURNING id
    ), stored_payloads AS (
      INSERT INTO payloads (key, data) SELECT payload_key, payload FROM fanned WHERE payload IS NOT NULL
    ), chosen AS (
      SELECT hookrelay_uuidv7_after(m.event_id, m.n) AS id, m.*, m.direct AND m.direct_rank <= ${options.lease?.slots ?? 0}::int AS leased
      FROM matched m WHERE m.endpoint_id IS NOT NULL
    ), messages AS (
      INSERT INTO outbound_messages (id, project_id, endpoint_id, event_id, event_type, idempotency_key, request_sha256, payload_format,
        content_type, size_bytes, payload_sha256, payload_key, created_at, updated_at)
      SELECT id, project_id, endpoint_id, event_id, event_type, NULL, request_sha256, payload_format,
             content_type, size_bytes, payload_sha256, payload_key, created_at, created_at
      FROM chosen
    ), ${queueDeliveries(sql, options.lease, options.origin)}
    SELECT 'message' AS source, c.position, c.id, c.endpoint_id, c.leased, NULL::uuid AS event_id, NULL::text AS url, NULL::jsonb AS headers,
           NULL::json AS secrets, NULL::uuid AS project_id, NULL::text AS idempotency_key, NULL::text AS request_sha256, NULL::text AS event_type,
           NULL::text AS owner_id, NULL::text[] AS channels, NULL::timestamptz AS created_at
    FROM chosen c
    UNION ALL
    SELECT 'event', NULL, se.id, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM stored_events se
    UNION ALL
    SELECT 'endpoint', NULL, NULL, le.id, false, NULL, le.url, le.headers, le.secrets, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM leased_endpoints le
    UNION ALL
    SELECT 'held', NULL, h.id, NULL, false, NULL, NULL, NULL, NULL, h.project_id, h.idempotency_key, h.request_sha256, h.event_type,
           h.owner_id, h.channels, h.created_at
    FROM held h
    UNION ALL
    -- What a repeat answers: the messages of a held event whose request a submission repeats.
    SELECT 'held_message', NULL, hm.id, hm.endpoint_id, false, h.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM held h
    -- OFFSET 0: an index lookup per held event, never a join that reads every message.
    CROSS JOIN LATERAL (SELECT m.id, m.endpoint_id FROM outbound_messages m WHERE m.event_id = h.id OFFSET 0) AS hm
    WHERE EXISTS (SELECT 1 FROM input i WHERE i.project_id = h.project_id AND i.idempotency_key = h.idempotency_key AND i.request_sha256 = h.request_sha256)
    UNION ALL
    -- Never a row: makes the NOTIFY part of the statement.
    SELECT 'woken', NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM ${notifiedRows(sql)}`;
  const result: FanOutResult = { stored: new Set(), messages: [], holders: [] };
  const endpoints: LeasedEndpointRow[] = [];
  const heldMessages = new Map<string, { id: string; endpoint_id: string }[]>();
  for (const row of rows) {
    switch (row.source) {
      case 'message':
        result.messages.push(row);
        break;
      case 'event':
        result.stored.add(row.id);
        break;
      case 'endpoint':
        endpoints.push(row);
        break;
      case 'held':
        result.holders.push({ ...row, messages: [] });
        break;
      case 'held_message': {
        const list = heldMessages.get(row.event_id) ?? [];
        list.push({ id: row.id, endpoint_id: row.endpoint_id });
        heldMessages.set(row.event_id, list);
        break;
      }
    }
  }
  withLeasedEndpoints(result.messages, endpoints);
  // Oldest first, as the fan-out made them: ids follow their event's in the order of their endpoints.
  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  result.messages.sort((a, b) => a.position - b.position || byId(a, b));
  for (const holder of result.holders) holder.messages = (heldMessages.get(holder.id) ?? []).sort(byId);
  return result;
}

/** A text[] as its literal: an array of arrays whose lengths differ cannot be a parameter. */
const textArray = (values: readonly string[]) => `{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;

export async function findEvent(sql: Sql, projectId: string, id: string): Promise<EventRow | undefined> {
  const [row] = await sql<EventRow>`SELECT ${COLUMNS(sql)} FROM events ev WHERE ev.id = ${id}::uuid AND ev.project_id = ${projectId}::uuid`;
  return row;
}

/** An event's message with how its delivery stands. */
export interface EventMessageRow {
  id: string;
  endpoint_id: string;
  status: DeliveryStatus;
  attempt_count: number;
  response_status: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  deleted_at: Date | null;
}

/** Every message of an event, oldest first (by id, in the order the fan-out made them). */
export async function listEventMessages(sql: Sql, eventId: string): Promise<EventMessageRow[]> {
  return sql<EventMessageRow>`
    SELECT m.id, m.endpoint_id, m.status, m.attempt_count, m.response_status, m.last_error, m.delivered_at, m.deleted_at
    FROM outbound_messages m WHERE m.event_id = ${eventId}::uuid
    ORDER BY m.id`;
}

export interface EventListFilters {
  eventType?: string | undefined;
  ownerId?: string | undefined;
  /** Inclusive. */
  createdAfter?: string | undefined;
  /** Exclusive. */
  createdBefore?: string | undefined;
}

/** Newest first by id (UUIDv7), on the (project, id), (project, type, id) or (project, owner, id) index. */
export async function listEvents(sql: Sql, projectId: string, filters: EventListFilters, page: { limit: number; beforeId?: string }): Promise<EventRow[]> {
  const where = [sql.fragment`ev.project_id = ${projectId}::uuid`];
  if (filters.eventType !== undefined) where.push(sql.fragment`ev.event_type = ${filters.eventType}`);
  if (filters.ownerId !== undefined) where.push(sql.fragment`ev.owner_id = ${filters.ownerId}`);
  where.push(...timeWindow(sql, sql.fragment`ev.created_at`, { from: filters.createdAfter, to: filters.createdBefore }));
  return sql<EventRow>`SELECT ${COLUMNS(sql)} FROM events ev ${newestFirstById(sql, sql.fragment`ev.id`, where, page)}`;
}
