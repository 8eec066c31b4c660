import { stripVTControlCharacters } from 'node:util';
import { HookrelayApiError, type LogRecordOut, type MessageOut, type PullDeleteAllOut, type PullEventDetailOut } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { usageError } from './usage-failure.js';
import { formatLogLine, formatLogTable, formatMessage, formatMessageBatchDeleted } from '../src/format/messages.js';
import { formatDeleteAll, formatPullEventAckBatch } from '../src/format/pull.js';
import { createStyle, plainStyle } from '../src/format/style.js';
import { isJsonMediaType, messageBodyFromFlags, type MessageInputSource } from '../src/message-input.js';
import { committedByError, DELETE_ALL_REQUEST_LIMIT, deleteAllInRounds, eventBodyBytes, mergeAckResults } from '../src/pull-events.js';
import { pullEventFilterArgs, pullEventFilters } from '../src/flags/pull.js';

function source(overrides: Partial<MessageInputSource> = {}): MessageInputSource {
  return {
    stdinIsTTY: false,
    readStdin: () => Promise.resolve(Buffer.alloc(0)),
    readFile: () => Promise.reject(Object.assign(new Error('nope'), { code: 'ENOENT' })),
    ...overrides,
  };
}

describe('messages send input', () => {
  it('recognises JSON media types, parameters and +json suffixes included', () => {
    expect(isJsonMediaType('application/json')).toBe(true);
    expect(isJsonMediaType('Application/JSON; charset=utf-8')).toBe(true);
    expect(isJsonMediaType('application/cloudevents+json')).toBe(true);
    expect(isJsonMediaType('text/plain')).toBe(false);
    expect(isJsonMediaType('application/x-www-form-urlencoded')).toBe(false);
    expect(isJsonMediaType('json')).toBe(false);
  });

  it('sends --data as a JSON payload, with the content type only when given', async () => {
    expect(await messageBodyFromFlags({ data: '{"a":[1,2]}' }, source())).toEqual({ payload: { a: [1, 2] } });
    expect(await messageBodyFromFlags({ data: '"text"', 'content-type': 'application/cloudevents+json' }, source())).toEqual({
      payload: 'text',
      content_type: 'application/cloudevents+json',
    });
  });

  it('sends a non-JSON content type as a text body, verbatim', async () => {
    expect(await messageBodyFromFlags({ data: 'a=1&b=2\n', 'content-type': 'application/x-www-form-urlencoded' }, source())).toEqual({
      body: 'a=1&b=2\n',
      content_type: 'application/x-www-form-urlencoded',
    });
  });

  it('refuses a body that is not JSON without --content-type, before any request', async () => {
    const error = await usageError(messageBodyFromFlags({ data: 'hello' }, source()));
    expect(error.message).toMatch(/--data is not valid JSON/u);
    expect(error.hint).toMatch(/--content-type/u);
  });

  it('reads --file, and stdin for --file - or when no flag is given and stdin is not a terminal', async () => {
    const files = source({
      readFile: (path) => Promise.resolve(Buffer.from(path === 'event.json' ? '\uFEFF{"from":"file"}' : '')),
      readStdin: () => Promise.resolve(Buffer.from('{"from":"stdin"}')),
    });
    expect(await messageBodyFromFlags({ file: 'event.json' }, files)).toEqual({ payload: { from: 'file' } });
    expect(await messageBodyFromFlags({ file: '-' }, files)).toEqual({ payload: { from: 'stdin' } });
    expect(await messageBodyFromFlags({}, files)).toEqual({ payload: { from: 'stdin' } });
  });

  it('asks for a body on a terminal, and refuses empty stdin, a missing file and non-UTF-8 bytes', async () => {
    expect((await usageError(messageBodyFromFlags({}, source({ stdinIsTTY: true })))).hint).toMatch(/--data/u);
    expect((await usageError(messageBodyFromFlags({}, source()))).message).toMatch(/stdin/u);
    expect((await usageError(messageBodyFromFlags({ file: 'missing.json' }, source()))).message).toMatch(/no such file/u);
    const binary = source({ readStdin: () => Promise.resolve(Buffer.from([0xff, 0xfe, 0x00])) });
    expect((await usageError(messageBodyFromFlags({ 'content-type': 'application/octet-stream' }, binary))).message).toMatch(/UTF-8/u);
  });
});

describe('pull event filters', () => {
  const now = Date.parse('2026-05-01T12:00:00Z');

  it('turns flags into API filters: statuses once each, times resolved', () => {
    expect(
      pullEventFilters({ status: ['stored', 'fetched', 'stored'], 'event-type': 'push', since: '1h', until: '2026-05-01T11:30:00Z' }, now),
    ).toEqual({
      status: ['stored', 'fetched'],
      event_type: 'push',
      received_after: '2026-05-01T11:00:00.000Z',
      received_before: '2026-05-01T11:30:00.000Z',
    });
    expect(pullEventFilters({}, now)).toEqual({});
  });

  it('gives the filters back as flags for the next-page hint', () => {
    expect(pullEventFilterArgs({ status: ['stored', 'fetched'], received_after: '2026-05-01T11:00:00.000Z' })).toEqual([
      '--status',
      'stored,fetched',
      '--since',
      '2026-05-01T11:00:00.000Z',
    ]);
  });

  it('refuses a time that is neither a duration nor ISO 8601', () => {
    expect(() => pullEventFilters({ since: 'yesterday' }, now)).toThrow(/--since/u);
  });
});

const id = (n: number): string => `0190b2c4-7d2e-7a51-9c3f-${n.toString(16).padStart(12, '0')}`;

function round(from: number, count: number): PullDeleteAllOut {
  const ids = Array.from({ length: count }, (_, i) => id(from + i));
  return { deleted: ids.length, deleted_event_ids: ids };
}

describe('delete-all in rounds', () => {
  it('repeats requests of 1000 until one deletes fewer', async () => {
    const limits: number[] = [];
    const answers = [round(0, 1000), round(1000, 1000), round(2000, 7)];
    const { result, error } = await deleteAllInRounds((limit) => {
      limits.push(limit);
      return Promise.resolve(answers.shift() ?? round(0, 0));
    });
    expect(error).toBeUndefined();
    expect(limits).toEqual([DELETE_ALL_REQUEST_LIMIT, DELETE_ALL_REQUEST_LIMIT, DELETE_ALL_REQUEST_LIMIT]);
    expect(result.deleted).toBe(2007);
    expect(result.deleted_event_ids.at(-1)).toBe(id(2006));
  });

  it('stops at --limit events over all requests', async () => {
    const limits: number[] = [];
    const { result } = await deleteAllInRounds((limit) => {
      limits.push(limit);
      return Promise.resolve(round(limits.length * 1000, limit));
    }, 1500);
    expect(limits).toEqual([1000, 500]);
    expect(result.deleted).toBe(1500);
  });

  it('on PARTIAL_DELETE_FAILURE reports every id committed: earlier requests and the error data', async () => {
    const failure = new HookrelayApiError('PARTIAL_DELETE_FAILURE', 'failed after 2', 500, 'req', undefined, round(1000, 2));
    let calls = 0;
    const { result, error } = await deleteAllInRounds(() => {
      calls += 1;
      return calls === 1 ? Promise.resolve(round(0, 1000)) : Promise.reject(failure);
    });
    expect(error).toBe(failure);
    expect(result.deleted).toBe(1002);
    expect(result.deleted_event_ids.slice(-2)).toEqual([id(1000), id(1001)]);
  });

  it('reads committed ids only from an error that carries them', () => {
    expect(committedByError(new HookrelayApiError('DELETE_FAILED', 'x', 500, 'r', undefined, { deleted: 0, deleted_event_ids: [] }))).toEqual({
      deleted: 0,
      deleted_event_ids: [],
    });
    expect(committedByError(new HookrelayApiError('INTERNAL_ERROR', 'x', 500, 'r'))).toBeUndefined();
    expect(committedByError(new Error('x'))).toBeUndefined();
  });
});

const event = (overrides: Partial<PullEventDetailOut>): PullEventDetailOut => ({
  id: id(1),
  endpoint_id: id(2),
  status: 'fetched',
  event_type: null,
  content_type: 'application/octet-stream',
  size_bytes: 3,
  payload_sha256: 'x',
  received_at: '2026-05-01T12:00:00.000Z',
  fetched_at: null,
  delivered_at: null,
  ingest_processing_ms: 1,
  time_to_first_fetch_ms: null,
  fetch_to_ack_ms: null,
  total_time_ms: null,
  method: 'POST',
  query: '',
  headers: {},
  raw_headers: [],
  ...overrides,
});

describe('pull events get --body-only', () => {
  it('decodes the base64 body to its exact bytes', () => {
    expect(eventBodyBytes(event({ body: Buffer.from([0, 255, 10]).toString('base64'), body_encoding: 'base64' }))).toEqual(Buffer.from([0, 255, 10]));
  });

  it('fails on a deleted event (exit 4) and on an unreadable payload (exit 6)', () => {
    expect(() => eventBodyBytes(event({ deleted_at: '2026-05-01T12:01:00.000Z' }))).toThrow(expect.objectContaining({ code: 'PAYLOAD_DELETED', exitCode: 4 }));
    expect(() => eventBodyBytes(event({ body_error: 'payload_unavailable' }))).toThrow(expect.objectContaining({ code: 'PAYLOAD_UNAVAILABLE', exitCode: 6 }));
  });
});

describe('batch results and formats', () => {
  it('merges ack-batch answers', () => {
    const merged = mergeAckResults([
      { results: [{ event_id: id(1), outcome: 'delivered', delivered_at: 'a' }], delivered_count: 1, already_delivered_count: 0, not_found_count: 0 },
      { results: [{ event_id: id(2), outcome: 'not_found' }], delivered_count: 0, already_delivered_count: 0, not_found_count: 1 },
    ]);
    expect(merged.results.map((r) => r.event_id)).toEqual([id(1), id(2)]);
    expect(merged).toMatchObject({ delivered_count: 1, not_found_count: 1 });
    expect(formatPullEventAckBatch(merged, plainStyle).split('\n')).toEqual([
      `${id(1)}  delivered`,
      `${id(2)}  not_found`,
      '1 acknowledged, 0 already acknowledged, 1 not found',
    ]);
  });

  it('prints delete-all as "deleted N" and then the ids', () => {
    expect(formatDeleteAll(round(0, 2), plainStyle).split('\n')).toEqual(['deleted 2', id(0), id(1)]);
    expect(formatDeleteAll(round(0, 0), plainStyle)).toBe('deleted 0');
  });

  it('prints message batch outcomes with counts', () => {
    const text = formatMessageBatchDeleted(
      { results: [{ message_id: id(1), outcome: 'deleted', deleted_at: 'x' }], deleted_count: 1, already_deleted_count: 0, not_found_count: 0 },
      createStyle(1),
    );
    expect(stripVTControlCharacters(text)).toBe(`${id(1)}  deleted\n1 deleted, 0 already deleted, 0 not found`);
  });
});

const logRow: LogRecordOut = {
  message_id: id(7),
  endpoint: 'https://example.com/hook',
  status: 'pending_retry',
  attempt_count: 2,
  created_at: '2026-05-01T12:00:00.000Z',
  first_attempt_at: '2026-05-01T12:00:00.100Z',
  next_attempt_at: '2026-05-01T12:05:00.000Z',
  response_status: 503,
  response_latency_ms: 12,
  processing_ms: 1,
  total_delivery_ms: null,
  queue_wait_ms: 100,
  last_error: 'HTTP 503',
};

describe('message and log formats', () => {
  it('shows a log row in the table and as a follow line', () => {
    const table = formatLogTable([logRow], plainStyle, { showEndpoint: false }).split('\n');
    expect(table[0]).toMatch(/^CREATED\s+MESSAGE\s+STATUS\s+ATTEMPTS\s+RESPONSE\s+LATENCY\s+ERROR$/u);
    expect(table[1]).toMatch(new RegExp(`${id(7)}\\s+pending_retry\\s+2\\s+503\\s+12 ms\\s+HTTP 503$`, 'u'));
    expect(formatLogLine(logRow, plainStyle)).toBe(`2026-05-01T12:00:00.000Z  ${id(7)}  pending_retry  503  12 ms  https://example.com/hook  HTTP 503`);
  });

  it('shows a message with its payload, or (deleted)', () => {
    const message: MessageOut = {
      ...logRow,
      endpoint_id: 'ep_0123456789abcdef0123456789abcdef',
      event_id: null,
      event_type: 'invoice.paid',
      idempotency_key: null,
      content_type: 'application/json',
      size_bytes: 9,
      payload_sha256: 'abc',
      updated_at: '2026-05-01T12:00:01.000Z',
      failed_at: null,
      payload: { a: 1 },
    };
    const now = new Date('2026-05-01T12:01:00Z');
    const text = formatMessage(message, plainStyle, now);
    expect(text).toMatch(/^Event type:\s+invoice\.paid$/mu);
    expect(text).toMatch(/^Next attempt:\s+2026-05-01T12:05:00\.000Z \(in 4m\)$/mu);
    expect(text).toContain('"a": 1');
    const { payload: _gone, ...rest } = message;
    expect(formatMessage({ ...rest, deleted_at: '2026-05-01T12:00:30.000Z' }, plainStyle, now)).toMatch(/Payload\n\(deleted\)$/u);
  });
});
