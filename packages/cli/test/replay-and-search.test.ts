import type { InboundEndpointMessageOut, MessageSearchMeta } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { editsFromFlags, replayEditsFromFlags } from '../src/flags/edits.js';
import { messageListArgs, messageListFilters } from '../src/flags/message-list.js';
import { formatEndpointMessageTable, formatReplay, formatSearchNote } from '../src/format/inbound-messages.js';
import { plainStyle } from '../src/format/style.js';
import { parseReplayHeaderFlag, replayHeadersFromFlags } from '../src/headers.js';
import type { MessageInputSource } from '../src/message-input.js';
import { usageError } from './usage-failure.js';

const ORIGINAL = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const COPY = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';

const files = (contents: Record<string, string>): MessageInputSource => ({
  stdinIsTTY: true,
  readStdin: () => Promise.resolve(Buffer.alloc(0)),
  readFile: (path) => (contents[path] === undefined ? Promise.reject(Object.assign(new Error('ENOENT'), { code: 'ENOENT' })) : Promise.resolve(Buffer.from(contents[path]!))),
});

describe('inbound messages replay: --header "Name: value"', () => {
  it('sets with a colon, removes with nothing after it, sends empty with a semicolon, as curl reads them', () => {
    expect(parseReplayHeaderFlag('X-Team: payments')).toEqual(['X-Team', 'payments']);
    expect(parseReplayHeaderFlag('X-Team:payments:eu')).toEqual(['X-Team', 'payments:eu']);
    expect(parseReplayHeaderFlag('User-Agent:')).toEqual(['User-Agent', null]);
    expect(parseReplayHeaderFlag('User-Agent:   ')).toEqual(['User-Agent', null]);
    expect(parseReplayHeaderFlag('X-Empty;')).toEqual(['X-Empty', '']);
  });

  it('refuses what is no header, a bad name, a line break in the value and a name twice (exit 2)', async () => {
    for (const input of ['X-Team=payments', 'bad name: x', 'X-A: one\ntwo']) await usageError(Promise.resolve().then(() => parseReplayHeaderFlag(input)));
    const twice = await usageError(Promise.resolve().then(() => replayHeadersFromFlags(['X-A: 1', 'x-a:'])));
    expect(twice.message).toContain('given twice');
  });

  it('builds the API’s headers: a map by name, null to remove', () => {
    expect(replayHeadersFromFlags(['X-GitHub-Event: issues', 'User-Agent:'])).toEqual({ 'X-GitHub-Event': 'issues', 'User-Agent': null });
    // No prototype: a header named like one of Object's members is a header like any other.
    expect(Object.getPrototypeOf(replayHeadersFromFlags(['constructor: x']))).toBeNull();
  });
});

describe('inbound messages replay: the edits', () => {
  it('--set reads PATH=VALUE as trigger does, and refuses the prototype paths before any request', async () => {
    expect(editsFromFlags(['data.object.amount=5000', 'livemode=true', 'note=plain text'])).toEqual([
      { path: 'data.object.amount', value: 5000 },
      { path: 'livemode', value: true },
      { path: 'note', value: 'plain text' },
    ]);
    for (const text of ['__proto__.x=1', 'a.constructor.prototype.x=1', 'novalue']) {
      const error = await usageError(Promise.resolve().then(() => editsFromFlags([text])));
      expect(error.message).toMatch(/^--set: /u);
    }
  });

  it('asks for nothing without flags, and sends what is given: body (inline or @FILE), set, headers, resign', async () => {
    expect(await replayEditsFromFlags({})).toBeUndefined();
    expect(await replayEditsFromFlags({ set: ['a=1'], header: ['X-A: 1'], resign: true })).toEqual({ set: [{ path: 'a', value: 1 }], headers: { 'X-A': '1' }, resign: true });
    expect(await replayEditsFromFlags({ body: '@push.json' }, files({ 'push.json': '{"ref":"refs/heads/main"}' }))).toEqual({ body: '{"ref":"refs/heads/main"}' });
    expect(await replayEditsFromFlags({ body: 'inline text' })).toEqual({ body: 'inline text' });
  });

  it('--resign without an edit is a usage error; a missing @FILE too', async () => {
    expect((await usageError(replayEditsFromFlags({ resign: true }))).message).toBe('--resign needs an edit (--set, --header or --body)');
    expect((await usageError(replayEditsFromFlags({ body: '@missing.json' }, files({})))).message).toBe('--body @missing.json: no such file');
  });

  it('says what became of the replay: the copy, and whether the server signed it', () => {
    expect(formatReplay({ message_id: COPY, replay_count: 0, status: 'queued', replay_of: ORIGINAL, edited: true, signed: false }, plainStyle, ORIGINAL)).toBe(
      `Replayed ${ORIGINAL} as an edited copy, message ${COPY} (unsigned: the original's signature headers were dropped): status queued. Connected listeners receive it now; a forward-mode endpoint delivers it.`,
    );
    expect(formatReplay({ message_id: COPY, replay_count: 0, status: 'queued', replay_of: ORIGINAL, edited: true, signed: true }, plainStyle, ORIGINAL)).toContain("(signed by the server with the endpoint's secret)");
    expect(formatReplay({ message_id: ORIGINAL, replay_count: 2, status: 'queued' }, plainStyle)).toBe(
      `Replayed ${ORIGINAL} (replay 2): status queued. Connected listeners receive it again now; a forward-mode endpoint delivers it again.`,
    );
  });
});

describe('inbound messages list --grep', () => {
  const now = Date.parse('2026-05-01T12:00:00.000Z');

  it('makes the search window explicit: the day before --until, else before now; --since as given', () => {
    expect(messageListFilters({ grep: 'cus_1' }, now)).toEqual({ q: 'cus_1', received_after: '2026-04-30T12:00:00.000Z', received_before: '2026-05-01T12:00:00.000Z' });
    expect(messageListFilters({ grep: 'cus_1', until: '2026-04-20T00:00:00Z' }, now)).toMatchObject({ received_after: '2026-04-19T00:00:00.000Z', received_before: '2026-04-20T00:00:00.000Z' });
    expect(messageListFilters({ grep: 'cus_1', since: '3d' }, now)).toMatchObject({ received_after: '2026-04-28T12:00:00.000Z', received_before: '2026-05-01T12:00:00.000Z' });
    // Without --grep the list has no window of its own.
    expect(messageListFilters({ 'event-type': 'push*', answer: '5xx' }, now)).toEqual({ event_type: 'push*', answer: '5xx' });
  });

  it('refuses an empty --grep; the next page’s command carries the resolved window', async () => {
    expect((await usageError(Promise.resolve().then(() => messageListFilters({ grep: '' }, now)))).message).toContain('--grep');
    const filters = messageListFilters({ grep: 'cus 1', 'event-type': 'invoice.*' }, now);
    expect(messageListArgs(filters, 20)).toEqual(['--grep', 'cus 1', '--event-type', 'invoice.*', '--since', '2026-04-30T12:00:00.000Z', '--until', '2026-05-01T12:00:00.000Z', '--limit', '20']);
  });

  it('shows the rows, edited copies noted, and says what the search read', () => {
    const row: InboundEndpointMessageOut = {
      id: COPY,
      message_id: COPY,
      inbound_endpoint_id: ORIGINAL,
      status: 'succeeded',
      method: 'POST',
      path: '/stripe',
      query: '',
      content_type: 'application/json',
      size_bytes: 120,
      payload_sha256: 'a'.repeat(64),
      event_type: 'invoice.paid',
      provider: 'stripe',
      verified: [],
      replay_count: 0,
      replay_of: ORIGINAL,
      edited: true,
      received_at: '2026-05-01T11:00:00.000Z',
      response_status: 200,
      response_latency_ms: 4,
      answers: [],
    };
    const [header, line] = formatEndpointMessageTable([row], plainStyle).split('\n');
    expect(header).toMatch(/^RECEIVED\s+MESSAGE\s+REQUEST\s+EVENT\s+STATUS\s+RESPONSE\s+SIZE\s+NOTE$/u);
    expect(line).toContain(`stripe invoice.paid`);
    expect(line).toMatch(new RegExp(`edited copy of ${ORIGINAL}$`, 'u'));
    expect(formatEndpointMessageTable([{ ...row, replay_of: null, edited: false }], plainStyle).split('\n')[0]).not.toContain('NOTE');

    const search: MessageSearchMeta = { q: 'cus_1', received_after: '2026-04-30T12:00:00.000Z', received_before: '2026-05-01T12:00:00.000Z', scan_limit: 100_000, scan_limit_reached: true, bodies: 'inline' };
    expect(formatSearchNote(search, plainStyle).split('\n')).toEqual([
      'searched "cus_1" in messages received from 2026-04-30T12:00:00.000Z to 2026-05-01T12:00:00.000Z: header values and the bodies stored in the database (not those above 256 KiB)',
      'the search stopped after 100,000 messages; the next page goes on from there',
    ]);
    expect(formatSearchNote({ ...search, scan_limit_reached: false, bodies: 'none' }, plainStyle)).toContain('header values only');
  });
});
