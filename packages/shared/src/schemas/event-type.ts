import { z } from 'zod';
import { EVENT_TYPE_SOURCES } from '../constants.js';
import { HeaderName } from './common.js';

// Defined without zod in constants.ts, for clients that only name it; exported here too, beside its schema.
export { EVENT_TYPE_SOURCES };

/**
 * Event type extraction settings, shared by pull endpoints and inbound endpoints (docs/api.md, Pull
 * ingestion): `event_type_source` (`body` or `header`) and `event_type_path` (a dot path into
 * the JSON body, or a header name).
 */
export const EventTypeSource = z.enum(EVENT_TYPE_SOURCES, { message: 'must be body or header' });
export type EventTypeSource = z.infer<typeof EventTypeSource>;

export const EventTypePath = z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters');

/** `a.b.c`: dot notation into the JSON body, no empty segment. */
const BODY_PATH_PATTERN = /^[^.]+(\.[^.]+)*$/;

/**
 * Why `path` cannot serve `source`, or null when it can. The server also asks this when a PATCH
 * combines a new source or path with the one already stored.
 */
export function eventTypePathProblem(source: EventTypeSource, path: string): string | null {
  if (source === 'body' && !BODY_PATH_PATTERN.test(path)) return 'must be a dot-separated JSON path such as data.type';
  if (source === 'header' && !HeaderName.safeParse(path).success) return 'must be an HTTP header name when event_type_source is header';
  return null;
}

/** The path must suit its source; only checkable when both travel in the same request. */
function checkPathForSource(source: EventTypeSource, path: string, ctx: z.RefinementCtx): void {
  const problem = eventTypePathProblem(source, path);
  if (problem !== null) ctx.addIssue({ code: 'custom', path: ['event_type_path'], message: problem });
}

/** The fields of a create body. */
export const eventTypeCreateShape = {
  event_type_source: EventTypeSource.optional(),
  event_type_path: EventTypePath.optional(),
};

/**
 * A create configures extraction by both fields together or not at all: a path without a source
 * would silently extract nothing.
 */
export function checkEventTypeCreate(value: { event_type_source?: EventTypeSource | undefined; event_type_path?: string | undefined }, ctx: z.RefinementCtx): void {
  if (value.event_type_source !== undefined && value.event_type_path === undefined) {
    ctx.addIssue({ code: 'custom', path: ['event_type_path'], message: 'is required when event_type_source is set' });
  } else if (value.event_type_source === undefined && value.event_type_path !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['event_type_source'], message: 'is required when event_type_path is set' });
  } else if (value.event_type_source !== undefined && value.event_type_path !== undefined) {
    checkPathForSource(value.event_type_source, value.event_type_path, ctx);
  }
}

/** The fields of a PATCH body: `""` clears. */
export const eventTypeUpdateShape = {
  event_type_source: z.union([z.literal(''), EventTypeSource], { message: 'must be body, header or ""' }).optional(),
  event_type_path: z.union([z.literal(''), EventTypePath], { message: 'must be a string' }).optional(),
};

/**
 * `event_type_source: ""` clears extraction (docs/api.md, Pull endpoints and events) and the stored
 * path with it, so a path may then only be omitted or "". Changing the source alone keeps the
 * stored path; the server checks that one exists.
 */
export function checkEventTypeUpdate(value: { event_type_source?: EventTypeSource | '' | undefined; event_type_path?: string | undefined }, ctx: z.RefinementCtx): void {
  const source = value.event_type_source;
  const path = value.event_type_path;
  if (source === '') {
    if (path !== undefined && path !== '') {
      ctx.addIssue({ code: 'custom', path: ['event_type_path'], message: 'must be omitted or "" when event_type_source is ""' });
    }
  } else if (path === '') {
    ctx.addIssue({ code: 'custom', path: ['event_type_path'], message: 'can be cleared only with event_type_source ""' });
  } else if (source !== undefined && path !== undefined) {
    checkPathForSource(source, path, ctx);
  }
}
