import type { EndpointUpdateIn, EventCreateIn, EventsQuery, EventTypeUpdateIn, JsonSchemaObject, JsonValue } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { usageFailure } from '../errors.js';
import { processInputSource, readFlagJson, readFlagText, type MessageInputSource } from '../message-input.js';
import { parseTimeFlag } from './time.js';

/** Argument descriptions, the same everywhere. */
export const EVENT_TYPE_NAME_DESCRIPTION = 'Event type name: 1-256 letters, digits and . _ - : / (invoice.paid, orders/create).';
export const EVENT_ID_DESCRIPTION = 'Event id (a UUID, from `events send` or `events list`).';

const JSON_INPUT = 'inline JSON, @FILE (its contents) or @- (stdin)';

/**
 * A list flag's values, each a comma list, as one list: items trimmed, empty ones dropped, each kept
 * once in the order given. A flag given only as '' is the empty list (nothing); not given, undefined.
 * Names of event types cannot hold a comma; a channel with a comma in its name cannot be given here.
 */
export function listFlagValues(values: readonly string[] | undefined): string[] | undefined {
  if (values === undefined || values.length === 0) return undefined;
  const items = values.flatMap((value) => value.split(',')).map((item) => item.trim()).filter((item) => item !== '');
  return [...new Set(items)];
}

/**
 * What an outbound endpoint receives of the project's events, for `endpoints create` and `update`
 * (docs/api.md, Events and subscriptions).
 */
export const subscriptionFlags = {
  owner: Flags.string({
    summary: 'The customer the endpoint belongs to: your own name for them, 1-256 printable characters. Default: none (your own endpoint).',
    helpValue: 'OWNER',
  }),
  'event-types': Flags.string({
    summary: "Event types it receives: globs (invoice.*), a comma list or repeated; '' for none. Default: every type.",
    helpValue: 'GLOBS',
    multiple: true,
    multipleNonGreedy: true,
  }),
  channels: Flags.string({
    summary: "Channels it listens on, a comma list or repeated: it then receives only events sent to one of them; '' for none. Default: events of any channel or none.",
    helpValue: 'NAMES',
    multiple: true,
    multipleNonGreedy: true,
  }),
};

/** `endpoints update`: back to the defaults (the API's `null`). */
export const subscriptionResetFlags = {
  'clear-owner': Flags.boolean({ summary: 'Owner back to none: the endpoint is your own again.', exclusive: ['owner'] }),
  'all-event-types': Flags.boolean({ summary: 'Receive every event type again (not hookrelay.*).', exclusive: ['event-types'] }),
  'any-channel': Flags.boolean({ summary: 'Receive events of any channel or none again.', exclusive: ['channels'] }),
};

export interface SubscriptionFlagValues {
  owner?: string | undefined;
  'event-types'?: string[] | undefined;
  channels?: string[] | undefined;
  'clear-owner'?: boolean | undefined;
  'all-event-types'?: boolean | undefined;
  'any-channel'?: boolean | undefined;
}

export type SubscriptionBody = Pick<EndpointUpdateIn, 'owner_id' | 'event_types' | 'channels'>;

/** The subscription fields of a create or PATCH body: only those given, `null` for a reset. */
export function subscriptionBody(flags: SubscriptionFlagValues): SubscriptionBody {
  const body: SubscriptionBody = {};
  if (flags.owner !== undefined) body.owner_id = flags.owner;
  if (flags['clear-owner'] === true) body.owner_id = null;
  const eventTypes = listFlagValues(flags['event-types']);
  if (eventTypes !== undefined) body.event_types = eventTypes;
  if (flags['all-event-types'] === true) body.event_types = null;
  const channels = listFlagValues(flags.channels);
  if (channels !== undefined) body.channels = channels;
  if (flags['any-channel'] === true) body.channels = null;
  return body;
}

/** Flags shared by `event-types create` and `update`. */
export const eventTypeSettingFlags = {
  description: Flags.string({ summary: 'What the type means, for the people who receive it (at most 1,000 characters).' }),
  schema: Flags.string({
    summary: `The JSON Schema (draft 2020-12) of this type's payloads: ${JSON_INPUT}.`,
    helpValue: 'JSON|@FILE',
  }),
  example: Flags.string({
    summary: `An example payload, checked against the schema: ${JSON_INPUT}.`,
    helpValue: 'JSON|@FILE',
  }),
};

export interface EventTypeFlagValues {
  description?: string | undefined;
  schema?: string | undefined;
  example?: string | undefined;
  'clear-schema'?: boolean | undefined;
  'clear-example'?: boolean | undefined;
  archived?: boolean | undefined;
}

/** Only one flag can read stdin: a second `@-` would find it empty. */
function assertOneStdin(flags: Readonly<Record<string, string | undefined>>): void {
  const readers = Object.entries(flags).filter(([, value]) => value === '@-').map(([name]) => `--${name}`);
  if (readers.length > 1) throw usageFailure(`${readers.join(' and ')} both read stdin (@-); only one can`, 'Put the others in files and give @PATH.');
}

/**
 * The settings of an event type from its flags: `--schema` and `--example` read and parsed as JSON
 * (the server checks the schema and the example against it), `--clear-…` as `null`.
 */
export async function eventTypeBody(flags: EventTypeFlagValues, source: MessageInputSource = processInputSource): Promise<EventTypeUpdateIn> {
  assertOneStdin({ schema: flags.schema, example: flags.example });
  const body: EventTypeUpdateIn = {};
  if (flags.description !== undefined) body.description = flags.description;
  if (flags.schema !== undefined) body.schema = (await readFlagJson('schema', flags.schema, source)) as JsonSchemaObject;
  if (flags['clear-schema'] === true) body.schema = null;
  if (flags.example !== undefined) body.example = (await readFlagJson('example', flags.example, source)) as JsonValue;
  if (flags['clear-example'] === true) body.example = null;
  if (flags.archived !== undefined) body.archived = flags.archived;
  return body;
}

export interface EventPayloadFlagValues {
  payload?: string | undefined;
  body?: string | undefined;
  'content-type'?: string | undefined;
}

export type EventPayload = Pick<EventCreateIn, 'payload' | 'body' | 'content_type'>;

/**
 * The payload of `events send`: `--payload` JSON or `--body` text, each inline or `@FILE` / `@-`;
 * exactly one of them. `--content-type` goes with either (a `+json` type for a payload, any type
 * for a body; the server's default is application/json, text/plain for a body).
 */
export async function eventPayloadFromFlags(flags: EventPayloadFlagValues, source: MessageInputSource = processInputSource): Promise<EventPayload> {
  if (flags.payload === undefined && flags.body === undefined) {
    throw usageFailure('no payload given', "Give --payload '{\"…\": …}' (or @FILE, @- for stdin) for JSON, or --body TEXT (or @FILE) with --content-type.");
  }
  if (flags.payload !== undefined && flags.body !== undefined) {
    throw usageFailure('--payload and --body cannot be used together', '--payload sends JSON; --body sends text as it is, with --content-type.');
  }
  const contentType = flags['content-type'] === undefined ? {} : { content_type: flags['content-type'] };
  if (flags.payload !== undefined) return { payload: (await readFlagJson('payload', flags.payload, source)) as JsonValue, ...contentType };
  return { body: (await readFlagText('body', flags.body ?? '', source)).text, ...contentType };
}

/** The filters of `events list`. */
export const eventFilterFlags = {
  type: Flags.string({ summary: 'Only events of this type (exact, case-sensitive).' }),
  owner: Flags.string({ summary: 'Only events sent for this owner (exact).' }),
  since: Flags.string({ summary: 'Only events created at or after this time: ISO 8601, or a duration ago (10m, 2h, 1d).' }),
  until: Flags.string({ summary: 'Only events created before this time: ISO 8601, or a duration ago.' }),
};

export interface EventFilterFlagValues {
  type?: string | undefined;
  owner?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

export type EventFilters = Pick<Partial<EventsQuery>, 'event_type' | 'owner_id' | 'created_after' | 'created_before'>;

/** The filters as the API takes them, times resolved against `now`. */
export function eventFilters(flags: EventFilterFlagValues, now: number): EventFilters {
  const filters: EventFilters = {};
  if (flags.type !== undefined) filters.event_type = flags.type;
  if (flags.owner !== undefined) filters.owner_id = flags.owner;
  if (flags.since !== undefined) filters.created_after = parseTimeFlag('since', flags.since, now);
  if (flags.until !== undefined) filters.created_before = parseTimeFlag('until', flags.until, now);
  return filters;
}

/** The filters as flags, for the next-page hint (times resolved, so that "10m" does not move on). */
export function eventFilterArgs(filters: EventFilters): string[] {
  const args: string[] = [];
  if (filters.event_type !== undefined) args.push('--type', filters.event_type);
  if (filters.owner_id !== undefined) args.push('--owner', filters.owner_id);
  if (filters.created_after !== undefined) args.push('--since', filters.created_after);
  if (filters.created_before !== undefined) args.push('--until', filters.created_before);
  return args;
}
