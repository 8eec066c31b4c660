import type { EndpointOut, EventCreateOut, EventOut, EventSummaryOut, EventTypeOut } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { usageError } from './usage-failure.js';
import {
  eventFilterArgs,
  eventFilters,
  eventPayloadFromFlags,
  eventTypeBody,
  listFlagValues,
  subscriptionBody,
} from '../src/flags/events.js';
import { formatEndpoint } from '../src/format/endpoints.js';
import { formatEventType, formatEventTypeTable } from '../src/format/event-types.js';
import { formatEvent, formatEventAccepted, formatEventTable } from '../src/format/events.js';
import { plainStyle } from '../src/format/style.js';
import { readFlagText, type MessageInputSource } from '../src/message-input.js';

const now = new Date('2026-05-01T12:00:00.000Z');
const EVENT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const M1 = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const M2 = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72';
const M3 = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f73';
const EP1 = 'ep_11111111111111111111111111111111';
const EP2 = 'ep_22222222222222222222222222222222';
const EP3 = 'ep_33333333333333333333333333333333';

function source(files: Record<string, string | Buffer> = {}, stdin?: string | Buffer, stdinIsTTY = false): MessageInputSource {
  return {
    stdinIsTTY,
    readStdin: () => Promise.resolve(Buffer.from(stdin ?? '')),
    readFile: (path) => {
      const content = files[path];
      if (content === undefined) return Promise.reject(Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' }));
      return Promise.resolve(Buffer.from(content));
    },
  };
}

describe('list flags (--event-types, --channels, --channel)', () => {
  it('joins comma lists and repeats, trimmed, each item once in the order given', () => {
    expect(listFlagValues(['invoice.*, customer.created', 'invoice.*', 'order.*'])).toEqual(['invoice.*', 'customer.created', 'order.*']);
    expect(listFlagValues(['a,,b,'])).toEqual(['a', 'b']);
  });

  it("reads '' as the empty list and no flag as nothing", () => {
    expect(listFlagValues([''])).toEqual([]);
    expect(listFlagValues([' , '])).toEqual([]);
    expect(listFlagValues(undefined)).toBeUndefined();
    expect(listFlagValues([])).toBeUndefined();
  });
});

describe('subscription flags of endpoints create and update', () => {
  it('sends only what is given', () => {
    expect(subscriptionBody({})).toEqual({});
    expect(subscriptionBody({ owner: 'acme', 'event-types': ['invoice.*,customer.created'], channels: ['eu', 'us'] })).toEqual({
      owner_id: 'acme',
      event_types: ['invoice.*', 'customer.created'],
      channels: ['eu', 'us'],
    });
    expect(subscriptionBody({ 'event-types': [''], channels: [''] })).toEqual({ event_types: [], channels: [] });
  });

  it('sends null for a reset to the default', () => {
    expect(subscriptionBody({ 'clear-owner': true, 'all-event-types': true, 'any-channel': true })).toEqual({
      owner_id: null,
      event_types: null,
      channels: null,
    });
    expect(subscriptionBody({ 'clear-owner': false, 'all-event-types': false, 'any-channel': false })).toEqual({});
  });
});

describe('flag values from @FILE and @-', () => {
  it('takes a value as it is, a file for @PATH and stdin for @-', async () => {
    const input = source({ 'note.txt': '\uFEFFfrom a file' }, 'from stdin');
    expect(await readFlagText('body', 'inline @ text', input)).toEqual({ text: 'inline @ text', origin: '--body' });
    expect(await readFlagText('body', '@note.txt', input)).toEqual({ text: 'from a file', origin: '--body @note.txt' });
    expect(await readFlagText('body', '@-', input)).toEqual({ text: 'from stdin', origin: '--body @-' });
  });

  it('names the flag and the file in every refusal', async () => {
    expect((await usageError(readFlagText('schema', '@missing.json', source()))).message).toBe('--schema @missing.json: no such file');
    expect((await usageError(readFlagText('schema', '@', source()))).message).toBe('--schema @: a file path must follow the @ (@- reads stdin)');
    expect((await usageError(readFlagText('payload', '@-', source({}, '', true)))).message).toBe('--payload @-: stdin is a terminal');
    expect((await usageError(readFlagText('payload', '@-', source({}, '')))).message).toBe('--payload @-: stdin was empty');
    const binary = source({ 'blob.bin': Buffer.from([0xff, 0xfe, 0x00]) });
    expect((await usageError(readFlagText('body', '@blob.bin', binary))).message).toBe('--body @blob.bin is not UTF-8 text');
  });
});

describe('event type settings from flags', () => {
  const schema = '{"type":"object","required":["amount"]}';

  it('parses --schema and --example, inline or from a file, and leaves out what is not given', async () => {
    const input = source({ 'schema.json': schema }, '{"amount":1}');
    expect(await eventTypeBody({ description: 'Paid', schema: '@schema.json', example: '@-', archived: true }, input)).toEqual({
      description: 'Paid',
      schema: { type: 'object', required: ['amount'] },
      example: { amount: 1 },
      archived: true,
    });
    expect(await eventTypeBody({ example: '42' }, input)).toEqual({ example: 42 });
    expect(await eventTypeBody({}, input)).toEqual({});
  });

  it('sends null for --clear-schema and --clear-example, false for --no-archived', async () => {
    expect(await eventTypeBody({ 'clear-schema': true, 'clear-example': true, archived: false }, source())).toEqual({
      schema: null,
      example: null,
      archived: false,
    });
  });

  it('refuses text that is not JSON, naming the flag and the file, and two readers of stdin', async () => {
    const input = source({ 'broken.json': '{"type":' });
    const fromFile = await usageError(eventTypeBody({ schema: '@broken.json' }, input));
    expect(fromFile.message).toMatch(/^--schema @broken\.json is not valid JSON: /u);
    expect(fromFile.hint).toBe('The file must hold one JSON value.');
    const inline = await usageError(eventTypeBody({ example: '{amount: 1}' }, input));
    expect(inline.message).toMatch(/^--example is not valid JSON: /u);
    expect(inline.hint).toMatch(/--example @PATH/u);
    expect((await usageError(eventTypeBody({ schema: '@-', example: '@-' }, input))).message).toBe('--schema and --example both read stdin (@-); only one can');
  });
});

describe('the payload of events send', () => {
  it('sends --payload as JSON and --body as text, with --content-type when given', async () => {
    const input = source({ 'invoice.json': '{"invoice":"in_42"}', 'report.csv': 'a,b\n1,2\n' });
    expect(await eventPayloadFromFlags({ payload: '@invoice.json' }, input)).toEqual({ payload: { invoice: 'in_42' } });
    expect(await eventPayloadFromFlags({ payload: '[1,2]', 'content-type': 'application/cloudevents+json' }, input)).toEqual({
      payload: [1, 2],
      content_type: 'application/cloudevents+json',
    });
    expect(await eventPayloadFromFlags({ body: '@report.csv', 'content-type': 'text/csv' }, input)).toEqual({ body: 'a,b\n1,2\n', content_type: 'text/csv' });
    expect(await eventPayloadFromFlags({ body: '{not json' }, input)).toEqual({ body: '{not json' });
  });

  it('needs exactly one of --payload and --body', async () => {
    expect((await usageError(eventPayloadFromFlags({}, source()))).message).toBe('no payload given');
    expect((await usageError(eventPayloadFromFlags({ payload: '1', body: 'x' }, source()))).message).toBe('--payload and --body cannot be used together');
    expect((await usageError(eventPayloadFromFlags({ payload: 'nope' }, source()))).message).toMatch(/^--payload is not valid JSON/u);
  });
});

describe('events list filters', () => {
  it('turns flags into API filters, times resolved, and back into flags for the next page', () => {
    const filters = eventFilters({ type: 'invoice.paid', owner: 'acme corp', since: '1h', until: '2026-05-01T11:30:00Z' }, now.getTime());
    expect(filters).toEqual({
      event_type: 'invoice.paid',
      owner_id: 'acme corp',
      created_after: '2026-05-01T11:00:00.000Z',
      created_before: '2026-05-01T11:30:00.000Z',
    });
    expect(eventFilterArgs(filters)).toEqual(['--type', 'invoice.paid', '--owner', 'acme corp', '--since', '2026-05-01T11:00:00.000Z', '--until', '2026-05-01T11:30:00.000Z']);
    expect(eventFilters({}, now.getTime())).toEqual({});
  });

  it('refuses a time that is neither a duration nor ISO 8601, naming the flag', () => {
    expect(() => eventFilters({ since: 'yesterday' }, now.getTime())).toThrow(/^--since: "yesterday" is neither/u);
  });
});

const created: EventCreateOut = {
  event_id: EVENT,
  event_type: 'invoice.paid',
  owner_id: 'acme',
  channels: [],
  messages: [
    { message_id: M1, endpoint_id: EP1 },
    { message_id: M2, endpoint_id: EP2 },
  ],
  created_at: '2026-05-01T11:59:58.000Z',
};

const summary: EventSummaryOut = {
  event_id: EVENT,
  event_type: 'invoice.paid',
  owner_id: 'acme',
  channels: ['eu', 'us'],
  content_type: 'application/json',
  size_bytes: 19,
  payload_sha256: 'ab'.repeat(32),
  idempotency_key: null,
  message_count: 3,
  created_at: '2026-05-01T11:59:58.000Z',
};

const event: EventOut = {
  ...summary,
  payload: { invoice: 'in_42' },
  messages: [
    { message_id: M1, endpoint_id: EP1, status: 'succeeded', attempt_count: 1, response_status: 200, last_error: null, delivered_at: '2026-05-01T11:59:59.000Z' },
    { message_id: M2, endpoint_id: EP2, status: 'pending_retry', attempt_count: 2, response_status: 503, last_error: 'HTTP 503\u001b[2J', },
    { message_id: M3, endpoint_id: EP3, status: 'queued', attempt_count: 0, response_status: null, last_error: null, deleted_at: '2026-05-01T12:00:00.000Z' },
  ],
};

describe('event formats', () => {
  it('shows the accepted event and the message each endpoint got', () => {
    expect(formatEventAccepted(created, plainStyle).split('\n')).toEqual([
      `Accepted event ${EVENT} (invoice.paid, owner acme): fanned out as 2 messages`,
      'ENDPOINT                             MESSAGE',
      `${EP1}  ${M1}`,
      `${EP2}  ${M2}`,
      `Follow the deliveries: hookrelay events get ${EVENT}`,
    ]);
  });

  it('says when no endpoint takes an event, and which list would show who does', () => {
    const none = formatEventAccepted({ ...created, owner_id: 'acme corp', channels: ['eu'], messages: [] }, plainStyle);
    expect(none.split('\n')).toEqual([
      `Accepted event ${EVENT} (invoice.paid, owner acme corp, channels eu): no endpoint takes it; the event is kept.`,
      "Endpoints of that type and owner: hookrelay endpoints list --owner 'acme corp' --event-type invoice.paid",
    ]);
    expect(formatEventAccepted({ ...created, owner_id: null, messages: [] }, plainStyle)).toContain('hookrelay endpoints list --event-type invoice.paid');
  });

  it('shows the fan-out as endpoint, message and status, with the counts, controls escaped', () => {
    const lines = formatEvent(event, plainStyle, now).split('\n');
    expect(lines).toContain('Owner:         acme');
    expect(lines).toContain('Channels:      eu, us');
    expect(lines).toContain('Created:       2026-05-01T11:59:58.000Z (2s ago)');
    const fanOut = lines.indexOf('Fan-out: 3 messages, 1 pending_retry, 1 queued, 1 succeeded');
    expect(fanOut).toBeGreaterThan(0);
    expect(lines.slice(fanOut + 1, fanOut + 5)).toEqual([
      'ENDPOINT                             MESSAGE                               STATUS         ATTEMPTS  RESPONSE  ERROR',
      `${EP1}  ${M1}  succeeded      1         200`,
      `${EP2}  ${M2}  pending_retry  2         503       HTTP 503\\x1b[2J`,
      `${EP3}  ${M3}  queued         0         -         (deleted)`,
    ]);
    expect(lines.slice(-5)).toEqual(['', 'Payload', '{', '  "invoice": "in_42"', '}']);
  });

  it('shows an event no endpoint took, with no owner or channels, and a text body', () => {
    const lines = formatEvent({ ...event, owner_id: null, channels: [], messages: [], payload: undefined, body: 'a,b' }, plainStyle, now).split('\n');
    expect(lines).toContain('Owner:         (none)');
    expect(lines).toContain('Channels:      (none)');
    expect(lines).toContain('Fan-out: no endpoint took this event');
    expect(lines).toContain('Endpoints of that type and owner now: hookrelay endpoints list --event-type invoice.paid');
    expect(lines.slice(-1)).toEqual(['a,b']);
  });

  it('lists events newest first with their message counts', () => {
    expect(formatEventTable([summary, { ...summary, owner_id: null, channels: [], message_count: 0 }], plainStyle).split('\n')).toEqual([
      'CREATED                   EVENT                                 TYPE          OWNER  CHANNELS  MESSAGES',
      `2026-05-01T11:59:58.000Z  ${EVENT}  invoice.paid  acme   eu,us     3`,
      `2026-05-01T11:59:58.000Z  ${EVENT}  invoice.paid  -      -         0`,
    ]);
  });
});

const eventType: EventTypeOut = {
  name: 'invoice.paid',
  description: 'An invoice was paid',
  schema: { type: 'object', required: ['amount'] },
  example: { amount: 1 },
  archived: false,
  created_at: '2026-05-01T11:00:00.000Z',
  updated_at: '2026-05-01T11:30:00.000Z',
};

describe('event type formats', () => {
  it('shows a type with its schema and example as JSON', () => {
    expect(formatEventType(eventType, plainStyle, now).split('\n')).toEqual([
      'Name:         invoice.paid',
      'Description:  An invoice was paid',
      'Status:       active',
      'Created:      2026-05-01T11:00:00.000Z (1h ago)',
      'Updated:      2026-05-01T11:30:00.000Z (30m ago)',
      '',
      'Schema',
      '{',
      '  "type": "object",',
      '  "required": [',
      '    "amount"',
      '  ]',
      '}',
      '',
      'Example',
      '{',
      '  "amount": 1',
      '}',
    ]);
    const bare = formatEventType({ ...eventType, description: '', schema: null, example: null, archived: true }, plainStyle, now);
    expect(bare).toContain('Description:  (none)');
    expect(bare).toContain('Status:       archived');
    expect(bare).toMatch(/Schema\n\(none\)\n\nExample\n\(none\)$/u);
  });

  it('lists the catalogue with status and whether a schema and an example are set', () => {
    const rows = [eventType, { ...eventType, name: 'invoice.legacy', schema: null, example: null, archived: true, description: 'old\nline' }];
    expect(formatEventTypeTable(rows, plainStyle).split('\n')).toEqual([
      'NAME            STATUS    SCHEMA  EXAMPLE  DESCRIPTION',
      'invoice.paid    active    yes     yes      An invoice was paid',
      'invoice.legacy  archived  -       -        old\\nline',
    ]);
  });
});

describe('endpoint subscriptions in endpoints get', () => {
  const endpoint: EndpointOut = {
    id: EP1,
    url: 'https://example.com/hook',
    description: '',
    rate_limit_rps: 0,
    burst: 0,
    headers: {},
    paused: false,
    paused_reason: null,
    paused_at: null,
    ephemeral: false,
    owner_id: null,
    event_types: null,
    channels: null,
    retention_days: null,
    created_at: '2026-05-01T11:00:00.000Z',
    updated_at: '2026-05-01T11:00:00.000Z',
  };

  it('shows the defaults, the empty lists and the lists', () => {
    const defaults = formatEndpoint(endpoint, plainStyle, now);
    expect(defaults).toContain('Owner:        (none: your own endpoint)');
    expect(defaults).toContain('Event types:  every type (not hookrelay.*)');
    expect(defaults).toContain('Channels:     any');
    const none = formatEndpoint({ ...endpoint, event_types: [], channels: [] }, plainStyle, now);
    expect(none).toContain('Event types:  none');
    expect(none).toContain('Channels:     none');
    const lists = formatEndpoint({ ...endpoint, owner_id: 'acme\u001b]0;x\u0007', event_types: ['invoice.*', 'customer.created'], channels: ['eu'] }, plainStyle, now);
    expect(lists).toContain('Owner:        acme\\x1b]0;x\\x07');
    expect(lists).toContain('Event types:  invoice.*, customer.created');
    expect(lists).toContain('Channels:     eu');
  });

  it('says who paused an endpoint and since when', () => {
    expect(formatEndpoint(endpoint, plainStyle, now)).toMatch(/^Status:\s+active$/mu);
    const failing = formatEndpoint({ ...endpoint, paused: true, paused_reason: 'failing', paused_at: '2026-05-01T09:00:00.000Z' }, plainStyle, now);
    expect(failing).toMatch(/^Status:\s+paused by hookrelay: every delivery kept failing since 2026-05-01T09:00:00\.000Z \(3h ago\)$/mu);
    const manual = formatEndpoint({ ...endpoint, paused: true, paused_reason: 'manual', paused_at: '2026-05-01T11:59:30.000Z' }, plainStyle, now);
    expect(manual).toMatch(/^Status:\s+paused manually since 2026-05-01T11:59:30\.000Z \(30s ago\)$/mu);
  });
});
