import { z } from 'zod';
import { EVENT_TYPE_LIMITS } from './event-catalogue.js';

/**
 * What an outbound endpoint receives of the events of its project (docs/api.md, Events and
 * subscriptions): its owner, the globs of the event types it takes, and its channels. Events name
 * the same owner and channels.
 */

/** Letters, marks, digits, punctuation, symbols and spaces: no control, format or unassigned characters. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}\p{Zs}]*$/u;

const printableText = (max: number) =>
  z
    .string({ message: 'must be a string' })
    .min(1, `must be 1–${max} printable characters`)
    .max(max, `must be 1–${max} printable characters`)
    .regex(PRINTABLE, `must be 1–${max} printable characters`);

/** The operator's own name for the customer an endpoint belongs to (`null`: the operator's own endpoint). */
export const OwnerId = printableText(256);

/** A channel an endpoint listens on, or an event is sent to. */
export const ChannelName = printableText(128);

/**
 * A glob of event types (`invoice.*`): the characters of an event type's name (`EventTypeName`) and
 * `*`, which matches any run of characters, as in the listen filters' globs.
 */
export const EventTypeGlob = z
  .string({ message: 'must be a string' })
  .min(1, 'must not be empty')
  .max(EVENT_TYPE_LIMITS.nameChars, `must be at most ${EVENT_TYPE_LIMITS.nameChars} characters`)
  .regex(/^[A-Za-z0-9._:/*-]+$/, 'must hold only letters, digits, . _ - : / and *');

/** A list of at most `max` items, each kept once in the order first given. */
function uniqueList<T extends z.ZodString>(item: T, max: number, noun: string) {
  return z
    .array(item, { message: `must be an array of ${noun}` })
    .max(max, `must hold at most ${max} ${noun}`)
    .transform((items) => [...new Set(items)]);
}

/**
 * An endpoint's `event_types`: `null` receives every type (except hookrelay's own: a glob matches a
 * reserved type only when it is reserved itself, `isReservedEventTypeName`), `[]` none.
 */
export const EventTypeGlobs = uniqueList(EventTypeGlob, 100, 'globs');

/**
 * An endpoint's `channels` (with a list it receives only events naming one of them, `[]` none;
 * `null`, events of any channel or none) and the channels an event names.
 */
export const ChannelNames = uniqueList(ChannelName, 50, 'channel names');
