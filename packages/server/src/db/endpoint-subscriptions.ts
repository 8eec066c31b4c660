import { globLiteralPrefix, globToLikePattern, isReservedEventTypeName, prefixesOf } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';

/**
 * The subscription index of outbound endpoints (migrations/021): a row per glob of an endpoint's
 * `event_types` (`*` for null) with its owner, so that the endpoints an event goes to are an index
 * lookup on (project, owner, prefix). The glob's meaning is shared/src/glob.ts's: the row holds the
 * glob as that module writes it for LIKE, and its literal prefix.
 */

/** Whose endpoint: the owner's id, '' for the operator's own (an owner id is never empty). */
const ownerKey = (ownerId: string | null) => ownerId ?? '';

/** The globs of an endpoint's `event_types`; null receives every type, as `*` does. */
const globsOf = (eventTypes: readonly string[] | null) => eventTypes ?? ['*'];

/**
 * Writes an endpoint's subscription rows anew from its owner and `event_types`, in the caller's
 * transaction with the endpoint's own write.
 */
export async function replaceEndpointSubscriptions(
  sql: Sql,
  endpoint: { id: string; projectId: string; ownerId: string | null; eventTypes: readonly string[] | null },
): Promise<void> {
  const globs = globsOf(endpoint.eventTypes);
  // Rows of globs it keeps are updated in place (its owner may be new) and the others deleted: one
  // statement cannot delete and insert the same primary key. Booleans go as text: the postgres
  // driver cannot send a boolean array.
  await sql`
    WITH dropped AS (
      DELETE FROM endpoint_subscriptions WHERE endpoint_id = ${endpoint.id} AND glob <> ALL(${[...globs]}::text[])
    )
    INSERT INTO endpoint_subscriptions (endpoint_id, project_id, owner_key, glob, prefix, pattern, reserved)
    SELECT ${endpoint.id}, ${endpoint.projectId}::uuid, ${ownerKey(endpoint.ownerId)}, g.glob, g.prefix, g.pattern, g.reserved
    FROM unnest(${[...globs]}::text[], ${globs.map(globLiteralPrefix)}::text[], ${globs.map(globToLikePattern)}::text[],
                ${globs.map((g) => String(isReservedEventTypeName(g)))}::text[]::boolean[]) AS g (glob, prefix, pattern, reserved)
    ON CONFLICT (endpoint_id, glob) DO UPDATE SET owner_key = excluded.owner_key`;
}

/**
 * The subscription row `s` takes an event of `eventType`: its prefix is one of the type's (the
 * index condition), its pattern matches, and a reserved type is taken only by a reserved glob.
 */
export function subscriptionMatches(sql: Sql, eventType: string): SqlFragment {
  return sql.fragment`s.prefix = ANY(${prefixesOf(eventType)}::text[])
    AND ${eventType}::text LIKE s.pattern ESCAPE '\\'
    AND (s.reserved OR NOT ${isReservedEventTypeName(eventType)}::boolean)`;
}

/** What the fan-out carries of an event to find its subscription rows (`subscribedEndpointIds`). */
export function subscriptionKeysOf(event: { ownerId: string | null; eventType: string }): { ownerKey: string; prefixes: string[]; reserved: boolean } {
  return { ownerKey: ownerKey(event.ownerId), prefixes: prefixesOf(event.eventType), reserved: isReservedEventTypeName(event.eventType) };
}

/**
 * The endpoints, each once, whose subscription rows take the event of the row `f` (its
 * `project_id`, `event_type`, and `owner_key`, `prefixes` and `reserved` of subscriptionKeysOf), as
 * `subscriptionMatches` decides for one type: an index lookup on (project, owner, prefix).
 */
export function subscribedEndpointIds(sql: Sql): SqlFragment {
  return sql.fragment`
    SELECT DISTINCT s.endpoint_id FROM endpoint_subscriptions s
    WHERE s.project_id = f.project_id AND s.owner_key = f.owner_key AND s.prefix = ANY(f.prefixes)
      AND f.event_type LIKE s.pattern ESCAPE '\\'
      AND (s.reserved OR NOT f.reserved)`;
}
