import type { EventCreateOut, EventMessageOut, EventMessageRef, EventOut, EventSummaryOut } from '@hookrelay/shared';
import { formatMessageStatus } from './inbound-messages.js';
import { formatKeyValues } from './key-value.js';
import { formatMessagePayload } from './messages.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { shellQuote, terminalSafe, truncate } from './text.js';
import { formatTimestamp } from './time.js';

const ERROR_COLUMN_MAX = 50;
const CHANNELS_COLUMN_MAX = 30;

function ownerLabel(owner: string | null, style: Style): string {
  return owner ?? style.dim('(none)');
}

function channelsLabel(channels: readonly string[], style: Style): string {
  return channels.length === 0 ? style.dim('(none)') : channels.join(', ');
}

/** "invoice.paid, owner acme": what decides where an event goes, in a line. */
function eventLine(event: Pick<EventCreateOut, 'event_type' | 'owner_id' | 'channels'>): string {
  const parts = [event.event_type];
  if (event.owner_id !== null) parts.push(`owner ${event.owner_id}`);
  if (event.channels.length > 0) parts.push(`channels ${event.channels.join(', ')}`);
  return parts.join(', ');
}

/** The endpoints list that shows who an event of this type and owner reaches (channels aside). */
function whoWouldReceive(event: Pick<EventCreateOut, 'event_type' | 'owner_id'>): string {
  return `hookrelay endpoints list${event.owner_id === null ? '' : ` --owner ${shellQuote(event.owner_id)}`} --event-type ${event.event_type}`;
}

function messageCount(count: number): string {
  return count === 1 ? '1 message' : `${count} messages`;
}

/** The answer of `events send`: the event and the message each endpoint got. */
export function formatEventAccepted(created: EventCreateOut, style: Style): string {
  created = terminalSafe(created);
  const head = `${style.green('Accepted')} event ${style.bold(created.event_id)} (${eventLine(created)})`;
  if (created.messages.length === 0) {
    return [
      `${head}: no endpoint takes it; the event is kept.`,
      style.dim(`Endpoints of that type and owner: ${whoWouldReceive(created)}`),
    ].join('\n');
  }
  const table = formatTable<EventMessageRef>(
    [
      { header: 'ENDPOINT', value: (m) => m.endpoint_id },
      { header: 'MESSAGE', value: (m) => m.message_id },
    ],
    created.messages,
    style,
  );
  return [`${head}: fanned out as ${messageCount(created.messages.length)}`, table, style.dim(`Follow the deliveries: hookrelay events get ${created.event_id}`)].join('\n');
}

/** "2 succeeded, 1 pending_retry": the fan-out's statuses, most frequent first. */
function statusCounts(messages: readonly EventMessageOut[], style: Style): string {
  const counts = new Map<string, number>();
  for (const message of messages) counts.set(message.status, (counts.get(message.status) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([status, count]) => `${count} ${formatMessageStatus(status, style)}`)
    .join(', ');
}

/** Each endpoint of the fan-out, the message it got and how its delivery stands, in message order. */
export function formatFanOutTable(messages: readonly EventMessageOut[], style: Style): string {
  messages = terminalSafe(messages);
  return formatTable<EventMessageOut>(
    [
      { header: 'ENDPOINT', value: (m) => m.endpoint_id },
      { header: 'MESSAGE', value: (m) => m.message_id },
      { header: 'STATUS', value: (m) => m.status, color: (text, _m, s) => formatMessageStatus(text, s) },
      { header: 'ATTEMPTS', value: (m) => String(m.attempt_count) },
      { header: 'RESPONSE', value: (m) => (m.response_status === null ? '-' : String(m.response_status)) },
      { header: 'ERROR', value: (m) => (m.deleted_at !== undefined ? '(deleted)' : truncate(m.last_error ?? '', ERROR_COLUMN_MAX)) },
    ],
    messages,
    style,
  );
}

/** One event: what it was sent as, its fan-out, then its payload. */
export function formatEvent(event: EventOut, style: Style, now: Date): string {
  event = terminalSafe(event);
  const details = formatKeyValues(
    [
      ['ID', style.bold(event.event_id)],
      ['Type', event.event_type],
      ['Owner', ownerLabel(event.owner_id, style)],
      ['Channels', channelsLabel(event.channels, style)],
      ['Content type', event.content_type],
      ['Size', `${event.size_bytes} bytes`],
      ['SHA-256', event.payload_sha256],
      ['Idempotency key', event.idempotency_key ?? undefined],
      ['Created', formatTimestamp(event.created_at, now)],
    ],
    style,
  );
  const fanOut =
    event.messages.length === 0
      ? [style.bold('Fan-out: no endpoint took this event'), style.dim(`Endpoints of that type and owner now: ${whoWouldReceive(event)}`)]
      : [`${style.bold('Fan-out:')} ${messageCount(event.messages.length)}, ${statusCounts(event.messages, style)}`, formatFanOutTable(event.messages, style)];
  return [details, '', ...fanOut, '', style.bold('Payload'), formatMessagePayload(event, style)].join('\n');
}

/** Events as a table, in the API's order (newest first). */
export function formatEventTable(events: readonly EventSummaryOut[], style: Style): string {
  events = terminalSafe(events);
  return formatTable<EventSummaryOut>(
    [
      { header: 'CREATED', value: (e) => e.created_at },
      { header: 'EVENT', value: (e) => e.event_id },
      { header: 'TYPE', value: (e) => e.event_type },
      { header: 'OWNER', value: (e) => e.owner_id ?? '-' },
      { header: 'CHANNELS', value: (e) => (e.channels.length === 0 ? '-' : truncate(e.channels.join(','), CHANNELS_COLUMN_MAX)) },
      { header: 'MESSAGES', value: (e) => String(e.message_count) },
    ],
    events,
    style,
  );
}
