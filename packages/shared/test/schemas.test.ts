import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  AttemptOut,
  batchDeleteResult,
  CliMessageOut,
  commaListParam,
  globListMatcher,
  globMatcher,
  globToRegExp,
  InboundEndpointCreateIn,
  InboundEndpointOut,
  InboundEndpointUpdateIn,
  InboundLogRecordOut,
  InboundLogsQuery,
  InboundMessageDeleteBatchIn,
  InboundMessageOut,
  InboundReplayIn,
  InboundResultIn,
  hasReplayEdits,
  ListenQuery,
  LogRecordOut,
  LogsQuery,
  MessageCreateIn,
  MessageDeleteBatchIn,
  MessageDeleteBatchOut,
  MessageOut,
  PullDeleteAllBody,
  PullDeleteAllQuery,
  PullEndpointCreateIn,
  PullEndpointCreateOut,
  PullEndpointListQuery,
  PullEndpointOut,
  PullEndpointUpdateIn,
  PullEventAckBatchIn,
  PullEventDeleteBatchIn,
  PullEventDeleteBatchOut,
  PullEventDetailOut,
  PullEventsQuery,
  PullEventsPageMeta,
  eventTypePathProblem,
  StreamFrame,
  StreamQuery,
  StreamResultFrame,
  StreamServerFrame,
  uuidv7AtTime,
  REJECTION_REASONS,
  RejectionDetailOut,
  RejectionOut,
  RejectionsQuery,
  WatchFrame,
  ErrorEnvelope,
  InboundIngestOut,
  PullIngestOut,
  sampleOutcome,
  successEnvelope,
} from '../src/index.js';

const EP = `ep_${'a'.repeat(32)}`;
const NOW = '2025-01-02T03:04:05.678Z';

/** Distinct, valid UUIDv7s. */
function uuids(n: number): string[] {
  return Array.from({ length: n }, (_, i) => uuidv7AtTime(1_700_000_000_000 + i));
}
const [ID1, ID2, ID3] = uuids(3) as [string, string, string];

/** The error messages of a failed parse, as `path message` lines the server would produce. */
function errors(schema: z.ZodType, input: unknown): string[] {
  const result = schema.safeParse(input);
  if (result.success) return [];
  return result.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`);
}

function accepts(schema: z.ZodType, input: unknown): boolean {
  return schema.safeParse(input).success;
}

describe('limit parameters', () => {
  it.each([
    ['GET /v1/logs', LogsQuery, 500, 50],
    ['GET /v1/inbound-logs', InboundLogsQuery, 500, 50],
    ['pull events list', PullEventsQuery, 1000, 100],
    ['pull delete-all (query)', PullDeleteAllQuery, 1000, 1000],
    ['pull endpoint list', PullEndpointListQuery, 200, 50],
  ] as const)('%s: 1..%i, default %i', (_name, schema, max, defaultValue) => {
    expect(errors(schema, { limit: '0' })).toEqual(['limit must be at least 1']);
    expect(schema.parse({ limit: '1' }).limit).toBe(1);
    expect(schema.parse({ limit: String(max) }).limit).toBe(max);
    expect(errors(schema, { limit: String(max + 1) })).toEqual([`limit must be at most ${max}`]);
    expect(errors(schema, { limit: '1.5' })).toEqual(['limit must be an integer']);
    expect(accepts(schema, { limit: 'abc' })).toBe(false);
    expect(schema.parse({}).limit).toBe(defaultValue);
  });

  it('pull delete-all as a JSON body takes only JSON integers', () => {
    expect(PullDeleteAllBody.parse({}).limit).toBe(1000);
    expect(PullDeleteAllBody.parse({ limit: 1 }).limit).toBe(1);
    expect(PullDeleteAllBody.parse({ limit: 1000 }).limit).toBe(1000);
    expect(errors(PullDeleteAllBody, { limit: 0 })).toEqual(['limit must be at least 1']);
    expect(errors(PullDeleteAllBody, { limit: 1001 })).toEqual(['limit must be at most 1000']);
    expect(errors(PullDeleteAllBody, { limit: true })).toEqual(['limit must be an integer']);
    expect(errors(PullDeleteAllBody, { limit: '5' })).toEqual(['limit must be an integer']);
  });
});

describe('GET /v1/logs query', () => {
  it('checks endpoint_id, status and times', () => {
    expect(LogsQuery.parse({ endpoint_id: EP, status: 'pending_retry', start_time: NOW, end_time: '2025-01-02T04:00:00+02:00' })).toEqual({
      endpoint_id: EP,
      status: 'pending_retry',
      start_time: NOW,
      end_time: '2025-01-02T04:00:00+02:00',
      limit: 50,
    });
    expect(errors(LogsQuery, { endpoint_id: `ep_${'A'.repeat(32)}` })).toEqual([
      'endpoint_id must be ep_ followed by 32 lowercase hex characters',
    ]);
    expect(accepts(LogsQuery, { endpoint_id: `ep_${'a'.repeat(31)}` })).toBe(false);
    expect(errors(LogsQuery, { status: 'done' })[0]).toMatch(/^status must be one of queued, delivering/);
    expect(errors(LogsQuery, { start_time: 'yesterday' })).toEqual(['start_time must be an RFC 3339 date-time']);
    expect(errors(LogsQuery, { cursor: '' })).toHaveLength(1);
  });

  it('rejects unknown parameters', () => {
    expect(accepts(LogsQuery, { limit: '10', offset: '5' })).toBe(false);
    expect(accepts(InboundLogsQuery, { endpoint_id: EP })).toBe(false);
  });
});

describe('POST /v1/messages', () => {
  it('accepts a JSON payload of any kind, or a string body', () => {
    expect(accepts(MessageCreateIn, { endpoint_id: EP, payload: { a: [1, 2] } })).toBe(true);
    expect(accepts(MessageCreateIn, { endpoint_id: EP, payload: 'text' })).toBe(true);
    expect(accepts(MessageCreateIn, { endpoint_id: EP, payload: 0 })).toBe(true);
    expect(accepts(MessageCreateIn, { endpoint_id: EP, payload: null })).toBe(true);
    expect(
      MessageCreateIn.parse({
        endpoint_id: EP,
        body: 'a=1&b=2',
        content_type: 'application/x-www-form-urlencoded; charset=utf-8',
        event_type: 'order.created',
        idempotency_key: 'k-1',
      }),
    ).toEqual({
      endpoint_id: EP,
      body: 'a=1&b=2',
      content_type: 'application/x-www-form-urlencoded; charset=utf-8',
      event_type: 'order.created',
      idempotency_key: 'k-1',
    });
  });

  it('needs exactly one of payload and body', () => {
    expect(errors(MessageCreateIn, { endpoint_id: EP })).toEqual(['payload or body is required']);
    expect(errors(MessageCreateIn, { endpoint_id: EP, payload: {}, body: '{}' })).toEqual([
      'body must not be given together with payload',
    ]);
  });

  it('checks endpoint_id, content_type and unknown fields', () => {
    expect(errors(MessageCreateIn, { payload: {} })[0]).toMatch(/^endpoint_id /);
    expect(accepts(MessageCreateIn, { endpoint_id: 'ep_123', payload: {} })).toBe(false);
    expect(errors(MessageCreateIn, { endpoint_id: EP, body: 'x', content_type: 'text/plain\r\nX-Evil: 1' })).toEqual([
      'content_type must be a media type such as application/json',
    ]);
    expect(accepts(MessageCreateIn, { endpoint_id: EP, body: 'x', content_type: 'plain' })).toBe(false);
    expect(accepts(MessageCreateIn, { endpoint_id: EP, body: 1 })).toBe(false);
    expect(accepts(MessageCreateIn, { endpoint_id: EP, payload: {}, idempotency_key: '' })).toBe(false);
    expect(accepts(MessageCreateIn, { endpoint_id: EP, payload: {}, priority: 1 })).toBe(false);
  });

  it('does not overflow on a deeply nested payload', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(accepts(MessageCreateIn, { endpoint_id: EP, payload: deep })).toBe(true);
  });
});

describe('batch id lists', () => {
  it.each([
    ['outbound delete-batch', MessageDeleteBatchIn, 'message_ids', 100],
    ['inbound delete-batch', InboundMessageDeleteBatchIn, 'message_ids', 100],
    ['pull event delete-batch', PullEventDeleteBatchIn, 'message_ids', 100],
    ['pull event ack-batch', PullEventAckBatchIn, 'event_ids', 1000],
  ] as const)('%s: %s takes 1..%i UUIDs', (_name, schema, field, max) => {
    expect(accepts(schema, { [field]: uuids(1) })).toBe(true);
    expect(accepts(schema, { [field]: uuids(max) })).toBe(true);
    expect(errors(schema, { [field]: uuids(max + 1) })).toEqual([`${field} must contain at most ${max} ids`]);
    expect(errors(schema, { [field]: [] })).toEqual([`${field} must contain at least 1 id`]);
    expect(errors(schema, { [field]: ['not-a-uuid'] })).toEqual([`${field}.0 must be a UUID`]);
    expect(accepts(schema, {})).toBe(false);
    expect(accepts(schema, { [field]: uuids(1), extra: true })).toBe(false);
  });

  it('keeps a repeated id once', () => {
    expect(MessageDeleteBatchIn.parse({ message_ids: [ID1, ID2, ID1] }).message_ids).toEqual([ID1, ID2]);
  });

  it('pull ack-batch does not take message_ids', () => {
    expect(accepts(PullEventAckBatchIn, { message_ids: uuids(1) })).toBe(false);
  });
});

describe('batch delete result', () => {
  const counts = { deleted_count: 1, already_deleted_count: 1, not_found_count: 1 };

  it('names the id field per resource', () => {
    const data = {
      results: [
        { message_id: ID1, outcome: 'deleted', deleted_at: NOW },
        { message_id: ID2, outcome: 'already_deleted', deleted_at: NOW },
        { message_id: ID3, outcome: 'not_found' },
      ],
      ...counts,
    };
    expect(MessageDeleteBatchOut.parse(data)).toEqual(data);
    expect(accepts(PullEventDeleteBatchOut, data)).toBe(false);
    expect(accepts(PullEventDeleteBatchOut, { results: [{ event_id: ID1, outcome: 'not_found' }], ...counts })).toBe(true);
    expect(accepts(MessageDeleteBatchOut, { results: [{ message_id: ID1, outcome: 'gone' }], ...counts })).toBe(false);
  });

  it('types the id field', () => {
    const Custom = batchDeleteResult('event_id');
    expectTypeOf<z.infer<typeof Custom>['results'][number]['event_id']>().toEqualTypeOf<string>();
    expectTypeOf<MessageDeleteBatchOut['results'][number]>().toHaveProperty('message_id');
  });
});

describe('output records', () => {
  const logRecord = {
    message_id: ID1,
    endpoint: 'https://example.com/hook',
    status: 'queued',
    attempt_count: 0,
    created_at: NOW,
    first_attempt_at: null,
    response_status: null,
    response_latency_ms: null,
    processing_ms: null,
    total_delivery_ms: null,
    queue_wait_ms: null,
    last_error: null,
  };

  it('log record: delivered_at and next_attempt_at may be absent; deleted_at may be null', () => {
    expect(accepts(LogRecordOut, logRecord)).toBe(true);
    expect(accepts(LogRecordOut, { ...logRecord, deleted_at: null })).toBe(true);
    expect(accepts(LogRecordOut, { ...logRecord, first_attempt_at: undefined })).toBe(false);
  });

  it('message record carries the payload in the shape it was sent', () => {
    const message = {
      ...logRecord,
      endpoint_id: EP,
      event_id: null,
      event_type: null,
      idempotency_key: null,
      content_type: 'application/json',
      size_bytes: 2,
      payload_sha256: 'f'.repeat(64),
      updated_at: NOW,
      failed_at: null,
    };
    expect(MessageOut.parse({ ...message, payload: { a: 1 } }).payload).toEqual({ a: 1 });
    expect(MessageOut.parse({ ...message, body: 'raw' }).body).toBe('raw');
    expect(accepts(MessageOut, { ...message, deleted_at: NOW, deleted_by_api_key_id: ID2, deleted_by_user_id: null })).toBe(true);
    expect(accepts(MessageOut, { ...message, body_error: 'storage_down' })).toBe(false);
    expect(accepts(MessageOut, { ...message, event_id: ID1 })).toBe(true);
    const { event_id: _eventId, ...withoutEventId } = message;
    expect(accepts(MessageOut, withoutEventId)).toBe(false);
  });

  it('attempt: no HTTP answer is a null status', () => {
    expect(
      accepts(AttemptOut, {
        id: ID1,
        message_id: ID2,
        attempt_number: 1,
        started_at: NOW,
        response_status: null,
        latency_ms: 15000,
        error: 'timeout',
      }),
    ).toBe(true);
    expect(accepts(AttemptOut, { id: ID1, message_id: ID2, attempt_number: 0, started_at: NOW, response_status: 200, latency_ms: 1, error: null })).toBe(false);
  });

  it('inbound message and log record', () => {
    const inbound = {
      id: ID1,
      message_id: ID1,
      project_id: ID2,
      inbound_endpoint_id: ID3,
      status: 'failed_permanent',
      attempt_count: 8,
      replay_count: 0,
      content_type: 'application/json',
      size_bytes: 10,
      payload_sha256: 'a'.repeat(64),
      method: 'POST',
      path: '/',
      query: '',
      idempotency_key: null,
      event_type: 'push',
      provider: 'github',
      verified: ['hmac'],
      replay_of: null,
      edited: false,
      signed: null,
      response_status: 500,
      response_latency_ms: 12,
      last_error: 'HTTP 500',
      queue_wait_ms: 3,
      total_delivery_ms: null,
      received_at: NOW,
      updated_at: NOW,
      failed_at: NOW,
      headers: { 'content-type': 'application/json' },
      raw_headers: [['Content-Type', 'application/json']],
      answers: [
        {
          listener: 'default',
          status: 500,
          latency_ms: 12,
          error: 'HTTP 500',
          response_headers: [['content-type', 'text/plain']],
          response_body: 'b29wcw==',
          response_body_truncated: false,
          resigned: false,
          answered_at: NOW,
        },
      ],
    };
    expect(accepts(InboundMessageOut, inbound)).toBe(true);
    expect(accepts(InboundMessageOut, { ...inbound, message_id: undefined })).toBe(false);
    expect(accepts(InboundMessageOut, { ...inbound, answers: undefined })).toBe(false);
    expect(accepts(InboundMessageOut, { ...inbound, answers: [{ ...inbound.answers[0], response_headers: [['x']] }] })).toBe(false);
    expect(accepts(InboundMessageOut, { ...inbound, raw_headers: [['only-a-name']] })).toBe(false);
    expect(accepts(InboundMessageOut, { ...inbound, status: 'stored' })).toBe(false);
    expect(accepts(InboundMessageOut, { ...inbound, provider: null })).toBe(true);
    expect(accepts(InboundMessageOut, { ...inbound, provider: 'GitHub' })).toBe(false);
    expect(accepts(InboundMessageOut, { ...inbound, provider: undefined })).toBe(false);
    expect(
      accepts(InboundLogRecordOut, {
        message_id: ID1,
        inbound_endpoint_id: ID3,
        endpoint: '',
        status: 'succeeded',
        attempt_count: 1,
        received_at: NOW,
        delivered_at: NOW,
        response_status: 204,
        response_latency_ms: 5,
        last_error: null,
        total_delivery_ms: 9,
      }),
    ).toBe(true);
  });
});

describe('inbound endpoint create', () => {
  it('a cli endpoint needs only name and mode; a name is required', () => {
    expect(InboundEndpointCreateIn.parse({ name: 'dev', mode: 'cli' })).toEqual({ name: 'dev', mode: 'cli' });
    expect(InboundEndpointCreateIn.parse({ name: 'dev' })).toEqual({ name: 'dev' });
    expect(errors(InboundEndpointCreateIn, { name: '  ' })).toEqual(['name must not be empty']);
    expect(accepts(InboundEndpointCreateIn, { mode: 'cli' })).toBe(false);
  });

  it('forward mode requires an https url', () => {
    expect(errors(InboundEndpointCreateIn, { name: 'x', mode: 'forward' })).toEqual(['url is required when mode is forward']);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', mode: 'forward', url: 'https://example.com/in' })).toBe(true);
    expect(errors(InboundEndpointCreateIn, { name: 'x', url: 'http://example.com/in' })).toContain('url must start with https://');
    expect(errors(InboundEndpointCreateIn, { name: 'x', mode: 'relay' })).toEqual(['mode must be forward or cli']);
  });

  it.each([
    [199, false],
    [200, true],
    [204, true],
    [299, true],
    [300, false],
  ])('ingest_response_code %i accepted: %s', (code, ok) => {
    expect(accepts(InboundEndpointCreateIn, { name: 'x', ingest_response_code: code })).toBe(ok);
    expect(accepts(InboundEndpointUpdateIn, { ingest_response_code: code })).toBe(ok);
  });

  it('resign_late is true or false, on create and PATCH', () => {
    expect(InboundEndpointCreateIn.parse({ name: 'x', resign_late: false }).resign_late).toBe(false);
    expect(InboundEndpointUpdateIn.parse({ resign_late: true })).toEqual({ resign_late: true });
    expect(errors(InboundEndpointUpdateIn, { resign_late: 'no' })).toEqual(['resign_late must be true or false']);
  });

  it('ingest_response_code messages', () => {
    expect(errors(InboundEndpointCreateIn, { name: 'x', ingest_response_code: 199 })).toEqual(['ingest_response_code must be at least 200']);
    expect(errors(InboundEndpointCreateIn, { name: 'x', ingest_response_code: 300 })).toEqual(['ingest_response_code must be at most 299']);
    expect(errors(InboundEndpointCreateIn, { name: 'x', ingest_response_code: 200.5 })).toEqual(['ingest_response_code must be an integer']);
  });

  it('ttl_minutes 1..1440 whenever given', () => {
    expect(accepts(InboundEndpointCreateIn, { name: 'x', ephemeral: true, ttl_minutes: 1 })).toBe(true);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', ephemeral: true, ttl_minutes: 1440 })).toBe(true);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', ephemeral: true, ttl_minutes: 0 })).toBe(false);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', ttl_minutes: 1441 })).toBe(false);
  });

  it('a verification check needs its settings', () => {
    expect(errors(InboundEndpointCreateIn, { name: 'x', verify_hmac: true })).toEqual([
      'hmac_secret is required when verify_hmac is true',
      'hmac_header_name is required when verify_hmac is true and hmac_scheme is hex or base64',
    ]);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', verify_hmac: true, hmac_header_name: 'X-Signature', hmac_secret: 's' })).toBe(true);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', verify_hmac: true, hmac_scheme: 'github', hmac_secret: 's' })).toBe(true);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', verify_hmac: true, hmac_scheme: 'sha1', hmac_secret: 's' })).toBe(false);

    expect(errors(InboundEndpointCreateIn, { name: 'x', verify_static_token: true })).toEqual([
      'static_token is required when verify_static_token is true',
      'static_token_header_name or static_token_query_param is required when verify_static_token is true',
    ]);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', verify_static_token: true, static_token: 't', static_token_query_param: 'token' })).toBe(true);

    expect(errors(InboundEndpointCreateIn, { name: 'x', verify_ip_allowlist: true })).toEqual([
      'allowed_cidrs must list at least one CIDR block when verify_ip_allowlist is true',
    ]);
    // Settings without their flag are kept for later.
    expect(accepts(InboundEndpointCreateIn, { name: 'x', hmac_secret: 's' })).toBe(true);
  });

  it('checks CIDR blocks, header names and the timestamp tolerance', () => {
    const ok = ['203.0.113.0/24', '10.0.0.1', '0.0.0.0/0', '2001:db8::/32', '::1/128'];
    expect(accepts(InboundEndpointCreateIn, { name: 'x', verify_ip_allowlist: true, allowed_cidrs: ok })).toBe(true);
    for (const bad of ['10.0.0.0/33', '2001:db8::/129', '10.0.0/8', 'example.com', '10.0.0.0/', '10.0.0.0/8x', 'fe80::1%eth0']) {
      expect(errors(InboundEndpointCreateIn, { name: 'x', allowed_cidrs: [bad] })).toEqual([
        'allowed_cidrs.0 must be a CIDR block such as 203.0.113.0/24',
      ]);
    }
    expect(errors(InboundEndpointCreateIn, { name: 'x', hmac_header_name: 'X Sig' })).toEqual(['hmac_header_name must be an HTTP header name']);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', idempotency_header_names: ['Idempotency-Key', 'X-GitHub-Delivery'] })).toBe(true);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', idempotency_header_names: ['bad:name'] })).toBe(false);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', timestamp_tolerance_seconds: 0 })).toBe(false);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', timestamp_tolerance_seconds: 300 })).toBe(true);
  });

  it('rejects unknown fields', () => {
    expect(errors(InboundEndpointCreateIn, { name: 'x', secret_token: 'abc' })).toHaveLength(1);
    expect(accepts(InboundEndpointCreateIn, { name: 'x', paused: true })).toBe(false);
  });
});

describe('inbound endpoint event type rule', () => {
  it('is set by both fields or neither, in the pull endpoints’ forms; "" clears it on update', () => {
    expect(InboundEndpointCreateIn.parse({ name: 'x', event_type_source: 'header', event_type_path: 'X-Event' })).toMatchObject({ event_type_source: 'header' });
    expect(errors(InboundEndpointCreateIn, { name: 'x', event_type_source: 'body' })).toEqual(['event_type_path is required when event_type_source is set']);
    expect(errors(InboundEndpointCreateIn, { name: 'x', event_type_path: 'type' })).toEqual(['event_type_source is required when event_type_path is set']);
    expect(errors(InboundEndpointCreateIn, { name: 'x', event_type_source: 'body', event_type_path: 'a..b' })).toEqual(['event_type_path must be a dot-separated JSON path such as data.type']);
    expect(InboundEndpointUpdateIn.parse({ event_type_source: '' })).toEqual({ event_type_source: '' });
    expect(errors(InboundEndpointUpdateIn, { event_type_path: '' })).toEqual(['event_type_path can be cleared only with event_type_source ""']);
    expect(errors(InboundEndpointUpdateIn, { event_type_source: 'header', event_type_path: 'a b' })).toEqual(['event_type_path must be an HTTP header name when event_type_source is header']);
  });
});

describe('globs of the listen filters', () => {
  it('match whole strings; * is any run, / included; everything else is literal and case-sensitive', () => {
    expect(globToRegExp('checkout.*').test('checkout.session.completed')).toBe(true);
    expect(globToRegExp('checkout.*').test('checkoutXsession')).toBe(false);
    expect(globToRegExp('/github/*').test('/github/push/x')).toBe(true);
    expect(globToRegExp('/github/*').test('/github')).toBe(false);
    expect(globToRegExp('push').test('Push')).toBe(false);
    expect(globToRegExp('a+(b)?[c]$').test('a+(b)?[c]$')).toBe(true);
    expect(globToRegExp('*').test('')).toBe(true);
  });

  it('match the same as predicates, without backtracking', () => {
    const cases: [string, string, boolean][] = [
      ['checkout.*', 'checkout.session.completed', true],
      ['checkout.*', 'checkoutXsession', false],
      ['/github/*', '/github/push/x', true],
      ['/github/*', '/github', false],
      ['*.closed', 'pull_request.closed', true],
      ['a*b*c', 'a_b%c', true],
      ['a*b*c', 'acb', false],
      ['a*a', 'a', false],
      ['a*a', 'aa', true],
      ['*ab*ab*', 'abab', true],
      ['*ab*ab*', 'aba', false],
      ['**', '', true],
      ['push', 'Push', false],
      ['a+(b)?[c]$', 'a+(b)?[c]$', true],
    ];
    for (const [glob, value, expected] of cases) {
      expect(globMatcher(glob)(value), `${glob} ~ ${value}`).toBe(expected);
      expect(globToRegExp(glob).test(value), `${glob} ~ ${value}`).toBe(expected);
    }
    const list = globListMatcher(' push , pull_request,,checkout.*');
    expect(['push', 'pull_request', 'checkout.x', 'pushed', 'xpush'].map(list)).toEqual([true, true, true, false, false]);
    // A glob that would make a regular expression backtrack for ages answers at once.
    expect(globMatcher(`${'*a'.repeat(500)}*b`)('a'.repeat(8000))).toBe(false);
  });
});

describe('inbound endpoint update', () => {
  it('everything is optional; ephemeral and ttl are not updatable', () => {
    expect(InboundEndpointUpdateIn.parse({})).toEqual({});
    expect(accepts(InboundEndpointUpdateIn, { ephemeral: true })).toBe(false);
    expect(accepts(InboundEndpointUpdateIn, { ttl_minutes: 10 })).toBe(false);
  });

  it('"" clears the url and header settings, but not in forward mode', () => {
    expect(InboundEndpointUpdateIn.parse({ url: '', timestamp_header_name: '' })).toEqual({ url: '', timestamp_header_name: '' });
    expect(errors(InboundEndpointUpdateIn, { mode: 'forward', url: '' })).toEqual(['url cannot be cleared when mode is forward']);
    expect(accepts(InboundEndpointUpdateIn, { url: 'https://example.com/new' })).toBe(true);
    expect(errors(InboundEndpointUpdateIn, { url: 'ftp://example.com/new' })).toContain('url must start with https://');
    expect(errors(InboundEndpointUpdateIn, { url: 5 })).toEqual(['url must be an https URL or ""']);
    expect(errors(InboundEndpointUpdateIn, { hmac_header_name: 'a b' })).toEqual(['hmac_header_name must be an HTTP header name']);
    expect(accepts(InboundEndpointUpdateIn, { hmac_secret: '' })).toBe(false);
    expect(accepts(InboundEndpointUpdateIn, { name: '' })).toBe(false);
  });

  it('full record output has no secrets', () => {
    expect(Object.keys(InboundEndpointOut.shape)).not.toContain('hmac_secret');
    expect(Object.keys(InboundEndpointOut.shape)).not.toContain('static_token');
    expect(Object.keys(InboundEndpointOut.shape)).not.toContain('secret_token');
  });
});

describe('listen, stream and results', () => {
  const cliMessage = {
    message_id: ID1,
    content_type: 'application/octet-stream',
    headers: { 'x-a': '1, 2' },
    raw_headers: [
      ['X-A', '1'],
      ['X-A', '2'],
    ],
    size_bytes: 3,
    payload_sha256: 'b'.repeat(64),
    received_at: NOW,
    method: 'POST',
    path: '/github/push',
    query: 'x=1',
    event_type: 'push',
    body: 'AAEC',
    body_encoding: 'base64',
  };

  it('listen and stream filters', () => {
    for (const schema of [ListenQuery, StreamQuery]) {
      expect(schema.parse({ events: 'push, checkout.*', path: '/github/*' })).toEqual({ events: 'push, checkout.*', path: '/github/*' });
      expect(errors(schema, { events: ' , ' })).toEqual(['events must name at least one event type glob']);
      expect(errors(schema, { path: '' })).toEqual(['path must not be empty']);
      expect(accepts(schema, { events: 'x'.repeat(2001) })).toBe(false);
    }
    expect(CliMessageOut.safeParse({ ...cliMessage, event_type: undefined }).success).toBe(false);
    expect(accepts(CliMessageOut, { ...cliMessage, event_type: null })).toBe(true);
  });

  it('listen and stream queries', () => {
    expect(ListenQuery.parse({ after: ID1, body_encoding: 'base64' })).toEqual({ after: ID1, body_encoding: 'base64' });
    expect(errors(ListenQuery, { body_encoding: 'hex' })).toEqual(['body_encoding must be base64']);
    expect(errors(ListenQuery, { after: '42' })).toEqual(['after must be a UUID']);
    expect(accepts(ListenQuery, { limit: '10' })).toBe(false);
    expect(StreamQuery.parse({})).toEqual({});
    expect(accepts(StreamQuery, { api_key: 'hr_x' })).toBe(false);
  });

  it('CLI message: raw headers are [name, value] pairs; only base64 and payload_unavailable', () => {
    expect(CliMessageOut.parse(cliMessage).raw_headers).toEqual([
      ['X-A', '1'],
      ['X-A', '2'],
    ]);
    expect(accepts(CliMessageOut, { ...cliMessage, body: { a: 1 }, body_encoding: undefined })).toBe(true);
    expect(accepts(CliMessageOut, { ...cliMessage, body_encoding: 'hex' })).toBe(false);
    expect(accepts(CliMessageOut, { ...cliMessage, raw_headers: [['X-A']] })).toBe(false);
    const { body: _body, body_encoding: _encoding, ...withoutBody } = cliMessage;
    expect(accepts(CliMessageOut, { ...withoutBody, body_error: 'payload_unavailable' })).toBe(true);
    expect(accepts(CliMessageOut, { ...withoutBody, body_error: 'gone' })).toBe(false);
  });

  it('CLI message: a late signature says when it was made, and whether it goes re-signed or why not', () => {
    expect(accepts(CliMessageOut, { ...cliMessage, signed_at: NOW, resigned: true })).toBe(true);
    for (const reason of ['no_secret', 'disabled', 'unverified']) expect(accepts(CliMessageOut, { ...cliMessage, signed_at: NOW, resign_skipped: reason })).toBe(true);
    expect(accepts(CliMessageOut, { ...cliMessage, signed_at: NOW, resign_skipped: 'expired' })).toBe(false);
    expect(accepts(CliMessageOut, { ...cliMessage, resigned: false })).toBe(false);
    expect(accepts(CliMessageOut, { ...cliMessage, signed_at: 'ten minutes ago' })).toBe(false);
  });

  it('parses every frame by its type', () => {
    const ready = StreamFrame.parse(JSON.parse('{"type":"ready","cursor":null}'));
    expect(ready).toEqual({ type: 'ready', cursor: null });
    const message = StreamFrame.parse({ type: 'message', message: cliMessage });
    expect(message.type === 'message' && message.message.path).toBe('/github/push');
    const result = StreamFrame.parse({ type: 'result', message_id: ID1, status: 204, latency_ms: 7, error: null });
    expect(result).toEqual({ type: 'result', message_id: ID1, status: 204, latency_ms: 7, error: null });
    expect(accepts(StreamFrame, { type: 'ping' })).toBe(false);
    expect(accepts(StreamFrame, { type: 'ready' })).toBe(false);
    expect(accepts(StreamFrame, { type: 'ready', cursor: 'nope' })).toBe(false);
    // A client may send only results; a server only ready and message frames.
    expect(accepts(StreamServerFrame, { type: 'result', message_id: ID1, status: 200, latency_ms: 1, error: null })).toBe(false);
    expect(accepts(StreamServerFrame, { type: 'ready', cursor: ID1 })).toBe(true);
    expect(StreamServerFrame.parse({ type: 'cursor', cursor: ID1 })).toEqual({ type: 'cursor', cursor: ID1 });
    expect(accepts(StreamServerFrame, { type: 'cursor', cursor: null })).toBe(false);
  });

  it('a result report may carry the app’s answer, bounded', () => {
    const base = { message_id: ID1, status: 200, latency_ms: 3, error: null };
    const full = { ...base, listener: 'ci', response_headers: [['Content-Type', 'text/plain']], response_body: 'aGk=', response_body_truncated: true, resigned: true };
    expect(InboundResultIn.parse(full)).toEqual(full);
    expect(StreamResultFrame.parse({ type: 'result', ...full })).toEqual({ type: 'result', ...full });
    const max = Buffer.alloc(64 * 1024).toString('base64');
    expect(accepts(InboundResultIn, { ...base, response_body: max })).toBe(true);
    expect(errors(InboundResultIn, { ...base, response_body: Buffer.alloc(64 * 1024 + 1).toString('base64') })).toEqual(['response_body must be at most 65536 bytes once decoded']);
    expect(errors(InboundResultIn, { ...base, response_body: 'a=b=' })).toEqual(['response_body must be a base64 string']);
    expect(accepts(InboundResultIn, { ...base, response_headers: Array.from({ length: 100 }, () => ['a', 'b']) })).toBe(true);
    expect(accepts(InboundResultIn, { ...base, response_headers: Array.from({ length: 101 }, () => ['a', 'b']) })).toBe(false);
    expect(accepts(InboundResultIn, { ...base, response_headers: [['a', 'b'.repeat(16 * 1024)]] })).toBe(false);
    expect(errors(InboundResultIn, { ...base, listener: 'a\nb' })).toEqual(['listener must not contain control characters']);
    expect(accepts(InboundResultIn, { ...base, listener: 'x'.repeat(101) })).toBe(false);
    expect(InboundResultIn.parse({ ...base, response_headers: [['x', 'a\u0000b']] }).response_headers).toEqual([['x', 'a\ufffdb']]);
    expect(InboundResultIn.parse({ ...base, response_headers: [['\ud800', 'a\udc00b\ud83d\ude00']] }).response_headers).toEqual([['\ufffd', 'a\ufffdb\ud83d\ude00']]);
    expect(InboundResultIn.parse({ ...base, listener: 'l\udfff' }).listener).toBe('l\ufffd');
  });

  it('result frame and POST .../result take the same fields', () => {
    const base = { message_id: ID1, status: null, latency_ms: 0, error: 'ECONNREFUSED' };
    expect(InboundResultIn.parse(base)).toEqual(base);
    expect(StreamResultFrame.parse({ type: 'result', ...base })).toEqual({ type: 'result', ...base });
    expect(accepts(InboundResultIn, { ...base, type: 'result' })).toBe(false);
    expect(errors(InboundResultIn, { ...base, latency_ms: -1 })).toEqual(['latency_ms must be at least 0']);
    expect(accepts(InboundResultIn, { ...base, latency_ms: 1.5 })).toBe(false);
    expect(accepts(InboundResultIn, { ...base, status: 99 })).toBe(false);
    expect(accepts(InboundResultIn, { ...base, status: 600 })).toBe(false);
    expect(accepts(InboundResultIn, { message_id: ID1, latency_ms: 0, error: null })).toBe(false);
    expect(InboundResultIn.parse({ ...base, error: 'x'.repeat(5000) }).error).toHaveLength(2000);
  });
});

describe('pull endpoints', () => {
  it('create: retention_days 1..90 and extraction settings', () => {
    expect(accepts(PullEndpointCreateIn, { name: 'p' })).toBe(true);
    expect(accepts(PullEndpointCreateIn, { name: 'p', retention_days: 1 })).toBe(true);
    expect(accepts(PullEndpointCreateIn, { name: 'p', retention_days: 90 })).toBe(true);
    expect(errors(PullEndpointCreateIn, { name: 'p', retention_days: 0 })).toEqual(['retention_days must be at least 1']);
    expect(errors(PullEndpointCreateIn, { name: 'p', retention_days: 91 })).toEqual(['retention_days must be at most 90']);
    expect(accepts(PullEndpointCreateIn, { name: 'p', event_type_source: 'body', event_type_path: 'data.type' })).toBe(true);
    expect(accepts(PullEndpointCreateIn, { name: 'p', event_type_source: 'header', event_type_path: 'X-GitHub-Event' })).toBe(true);
    expect(errors(PullEndpointCreateIn, { name: 'p', event_type_source: 'body', event_type_path: 'data..type' })).toEqual([
      'event_type_path must be a dot-separated JSON path such as data.type',
    ]);
    expect(errors(PullEndpointCreateIn, { name: 'p', event_type_source: 'header', event_type_path: 'X Event' })).toEqual([
      'event_type_path must be an HTTP header name when event_type_source is header',
    ]);
    expect(errors(PullEndpointCreateIn, { name: 'p', event_type_source: 'body' })).toEqual([
      'event_type_path is required when event_type_source is set',
    ]);
    expect(errors(PullEndpointCreateIn, { name: 'p', event_type_path: 'type' })).toEqual([
      'event_type_source is required when event_type_path is set',
    ]);
    expect(accepts(PullEndpointCreateIn, { name: 'p', active: true })).toBe(false);
    // Ephemeral as the other endpoints: ttl_minutes 1..1440 whenever given; not updatable.
    expect(accepts(PullEndpointCreateIn, { name: 'p', ephemeral: true, ttl_minutes: 1440 })).toBe(true);
    expect(errors(PullEndpointCreateIn, { name: 'p', ephemeral: true, ttl_minutes: 0 })).toEqual(['ttl_minutes must be at least 1']);
    expect(errors(PullEndpointCreateIn, { name: 'p', ephemeral: 'yes' })).toEqual(['ephemeral must be true or false']);
    expect(accepts(PullEndpointUpdateIn, { ephemeral: true })).toBe(false);
    expect(accepts(PullEndpointUpdateIn, { ttl_minutes: 5 })).toBe(false);
  });

  it("event_type_source '' clears on update but is refused on create", () => {
    expect(errors(PullEndpointCreateIn, { name: 'p', event_type_source: '' })).toEqual(['event_type_source must be body or header']);
    expect(PullEndpointUpdateIn.parse({ event_type_source: '' })).toEqual({ event_type_source: '' });
    expect(accepts(PullEndpointUpdateIn, { event_type_source: '', event_type_path: '' })).toBe(true);
    expect(errors(PullEndpointUpdateIn, { event_type_source: '', event_type_path: 'type' })).toEqual([
      'event_type_path must be omitted or "" when event_type_source is ""',
    ]);
    expect(errors(PullEndpointUpdateIn, { event_type_path: '' })).toEqual(['event_type_path can be cleared only with event_type_source ""']);
    expect(errors(PullEndpointUpdateIn, { event_type_source: 'xml' })).toEqual(['event_type_source must be body, header or ""']);
    expect(accepts(PullEndpointUpdateIn, { retention_days: 91 })).toBe(false);
    expect(accepts(PullEndpointUpdateIn, { description: 'd'.repeat(500) })).toBe(true);
    expect(errors(PullEndpointUpdateIn, { description: 'd'.repeat(501) })).toEqual(['description must be at most 500 characters']);
    expect(accepts(PullEndpointUpdateIn, { secret_token: 'x' })).toBe(false);
  });

  it('records: event_counts on GET; secret and full URL on create', () => {
    const record = {
      id: ID1,
      name: 'p',
      description: '',
      retention_days: 7,
      max_body_bytes: null,
      event_type_source: null,
      event_type_path: null,
      ingest_url: `http://localhost:8787/pull/${ID1}`,
      active: true,
      paused: false,
      ephemeral: false,
      expires_at: null,
      rejections_dropped_count: 0,
      created_at: NOW,
      updated_at: NOW,
    };
    expect(accepts(PullEndpointOut, record)).toBe(true);
    expect(accepts(PullEndpointOut, { ...record, event_counts: { stored: 1, fetched: 0, delivered: 0, deleted: 0 } })).toBe(true);
    expect(accepts(PullEndpointOut, { ...record, event_counts: { stored: 1 } })).toBe(false);
    expect(accepts(PullEndpointOut, { ...record, ephemeral: true, expires_at: NOW })).toBe(true);
    expect(accepts(PullEndpointOut, { ...record, ephemeral: undefined })).toBe(false);
    expect(accepts(PullEndpointCreateOut, record)).toBe(false);
    expect(accepts(PullEndpointCreateOut, { ...record, secret_token: 'c'.repeat(32), full_ingest_url: `${record.ingest_url}/${'c'.repeat(32)}` })).toBe(true);
  });
});

describe('pull events', () => {
  it("status is a comma list defaulting to ['stored']", () => {
    expect(PullEventsQuery.parse({}).status).toEqual(['stored']);
    expect(PullEventsQuery.parse({ status: 'stored,fetched' }).status).toEqual(['stored', 'fetched']);
    expect(PullEventsQuery.parse({ status: ' delivered , stored,stored' }).status).toEqual(['delivered', 'stored']);
    // Fastify turns ?status=a&status=b into an array.
    expect(PullEventsQuery.parse({ status: ['stored', 'fetched,delivered'] }).status).toEqual(['stored', 'fetched', 'delivered']);
    expect(errors(PullEventsQuery, { status: 'stored,acked' })).toEqual(['status must be a comma-separated list of stored, fetched, delivered']);
    expect(errors(PullEventsQuery, { status: '' })).toEqual(['status must be a comma-separated list of stored, fetched, delivered']);
    expect(errors(PullEventsQuery, { status: ',' })).toHaveLength(1);
    expect(accepts(PullEventsQuery, { status: 3 })).toBe(false);
  });

  it('list meta: next_cursor is a string, "" at the end, never null', () => {
    expect(accepts(PullEventsPageMeta, { request_id: 'r', has_more: false, next_cursor: '' })).toBe(true);
    expect(accepts(PullEventsPageMeta, { request_id: 'r', has_more: true, next_cursor: 'abc' })).toBe(true);
    expect(accepts(PullEventsPageMeta, { request_id: 'r', has_more: false, next_cursor: null })).toBe(false);
  });

  it('eventTypePathProblem judges a path against its source', () => {
    expect(eventTypePathProblem('body', 'data.type')).toBeNull();
    expect(eventTypePathProblem('body', 'data..type')).toMatch(/dot-separated/);
    expect(eventTypePathProblem('header', 'X-Event')).toBeNull();
    expect(eventTypePathProblem('header', 'X Event')).toMatch(/header name/);
  });

  it('filters and unknown parameters', () => {
    expect(PullEventsQuery.parse({ event_type: 'push', received_after: NOW, received_before: NOW, cursor: 'abc' })).toEqual({
      status: ['stored'],
      event_type: 'push',
      received_after: NOW,
      received_before: NOW,
      limit: 100,
      cursor: 'abc',
    });
    expect(errors(PullEventsQuery, { received_after: '2025-01-02' })).toEqual(['received_after must be an RFC 3339 date-time']);
    expect(accepts(PullEventsQuery, { type: 'push' })).toBe(false);
  });

  it('delete-all matches every status when none is given, from the query or a body', () => {
    expect(PullDeleteAllQuery.parse({})).toEqual({ status: ['stored', 'fetched', 'delivered'], limit: 1000 });
    expect(PullDeleteAllQuery.parse({ status: 'delivered', limit: '10' })).toEqual({ status: ['delivered'], limit: 10 });
    expect(PullDeleteAllBody.parse({ status: ['fetched'], event_type: 'push' })).toEqual({ status: ['fetched'], event_type: 'push', limit: 1000 });
    expect(PullDeleteAllBody.parse({ status: 'stored,fetched' }).status).toEqual(['stored', 'fetched']);
    expect(errors(PullDeleteAllQuery, { status: 'deleted' })).toEqual(['status must be a comma-separated list of stored, fetched, delivered']);
    expect(accepts(PullDeleteAllBody, { ids: [] })).toBe(false);
    expectTypeOf<PullDeleteAllQuery>().toEqualTypeOf<PullDeleteAllBody>();
  });

  it('event detail: body as in a CLI message, deleted_at on deleted events', () => {
    const event = {
      id: ID1,
      endpoint_id: ID2,
      status: 'fetched',
      event_type: null,
      content_type: 'application/json',
      size_bytes: 2,
      payload_sha256: 'd'.repeat(64),
      received_at: NOW,
      fetched_at: NOW,
      delivered_at: null,
      ingest_processing_ms: 1,
      time_to_first_fetch_ms: 5,
      fetch_to_ack_ms: null,
      total_time_ms: null,
      method: 'POST',
      query: '',
      headers: {},
      raw_headers: [],
    };
    expect(accepts(PullEventDetailOut, { ...event, body: {} })).toBe(true);
    expect(accepts(PullEventDetailOut, { ...event, deleted_at: NOW })).toBe(true);
    expect(accepts(PullEventDetailOut, { ...event, status: 'acked' })).toBe(false);
    expect(accepts(PullEventDetailOut, { ...event, method: undefined })).toBe(false);
    expect(accepts(PullEventDetailOut, { ...event, deleted_at: NOW, deleted_by_api_key_id: ID1, deleted_by_user_id: null })).toBe(true);
  });
});

describe('commaListParam', () => {
  it('is typed by its values', () => {
    const Colors = commaListParam(['red', 'green'] as const);
    expectTypeOf<z.infer<typeof Colors>>().toEqualTypeOf<('red' | 'green')[]>();
    expect(Colors.parse('green,red')).toEqual(['green', 'red']);
    expect(Colors.safeParse('blue').success).toBe(false);
  });
});

describe('refused requests', () => {
  const rejection = {
    id: ID1,
    endpoint_kind: 'inbound',
    endpoint_id: ID1,
    received_at: NOW,
    reason: 'signature_mismatch',
    detail: 'the x-hub-signature-256 header does not match',
    status: 401,
    method: 'POST',
    path: '/',
    query: '',
    raw_headers: [['x-hub-signature-256', 'sha256=00']],
    size_bytes: 2,
    body_sha256: null,
    body_truncated: false,
    source_address: '127.0.0.1',
  };

  it('a reason is one of the closed set, on records, queries and frames alike', () => {
    expect(REJECTION_REASONS).toContain('signature_mismatch');
    expect(accepts(RejectionOut, rejection)).toBe(true);
    expect(accepts(RejectionOut, { ...rejection, reason: 'bad_signature' })).toBe(false);
    expect(RejectionsQuery.safeParse({ reason: 'bad_signature' }).success).toBe(false);
    expect(RejectionsQuery.parse({ reason: 'token_missing' })).toEqual({ reason: 'token_missing', limit: 50 });
    expect(accepts(StreamServerFrame, { type: 'rejection', rejection })).toBe(true);
    expect(accepts(WatchFrame, { type: 'rejection', rejection })).toBe(true);
    expect(accepts(RejectionDetailOut, rejection)).toBe(false);
    expect(accepts(RejectionDetailOut, { ...rejection, body: 'e30=', body_encoding: 'base64' })).toBe(true);
  });
});

describe('ingest answers', () => {
  it('a stored or duplicate webhook names its message, a stored pull event its event; a refusal is the error envelope', () => {
    const meta = { request_id: ID3 };
    expect(accepts(successEnvelope(InboundIngestOut), { data: { message_id: ID1 }, meta })).toBe(true);
    expect(accepts(successEnvelope(InboundIngestOut), { data: { event_id: ID1 }, meta })).toBe(false);
    expect(accepts(successEnvelope(InboundIngestOut), { data: { message_id: 'm1' }, meta })).toBe(false);
    expect(accepts(successEnvelope(PullIngestOut), { data: { event_id: ID2 }, meta })).toBe(true);
    expect(accepts(successEnvelope(PullIngestOut), { data: { message_id: ID2 }, meta })).toBe(false);
    expect(accepts(ErrorEnvelope, { error: { code: 'UNAUTHORIZED', message: 'unauthorized' }, meta })).toBe(true);
    expect(accepts(ErrorEnvelope, { error: { code: 'NOPE', message: 'unauthorized' }, meta })).toBe(false);
  });

  it("a sample's outcome takes the message id from the ingest's answer, and none from any other body", () => {
    const sample = { body: Buffer.from('{}'), headers: [] };
    const outcome = (text: string) => sampleOutcome(ID1, 'github', 'push', '/', sample, { status: 200, duplicate: false, text }, true).message_id;
    expect(outcome(JSON.stringify({ data: { message_id: ID2 }, meta: { request_id: ID3 } }))).toBe(ID2);
    expect(outcome('')).toBeNull();
    expect(outcome('ok')).toBeNull();
    expect(outcome(JSON.stringify({ error: { code: 'GONE', message: 'gone' }, meta: { request_id: ID3 } }))).toBeNull();
  });
});

describe('edited replays (InboundReplayIn)', () => {
  const issues = (value: unknown) => {
    const parsed = InboundReplayIn.safeParse(value);
    return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  };

  it('takes body or set, headers and resign; an empty set or headers edits nothing', () => {
    expect(issues({ set: [{ path: 'a.b', value: 1 }], headers: { 'X-A': 'one', 'X-B': null }, resign: true })).toEqual([]);
    expect(issues({ body: 'text', headers: { 'Content-Type': 'text/plain' } })).toEqual([]);
    expect(hasReplayEdits(InboundReplayIn.parse({ set: [], headers: {} }))).toBe(false);
    expect(hasReplayEdits(InboundReplayIn.parse({ body: '' }))).toBe(true);
    expect(hasReplayEdits(undefined)).toBe(false);
  });

  it('refuses body with set, resign without an edit, and the samples’ refused paths', () => {
    expect(issues({ body: '{}', set: [{ path: 'a', value: 1 }] })).toEqual([expect.stringMatching(/^set: must not be given together with body/)]);
    expect(issues({ resign: true, set: [] })).toEqual([expect.stringMatching(/^resign: needs an edit/)]);
    expect(issues({ set: [{ path: 'a.__proto__.b', value: 1 }] })).toEqual([expect.stringMatching(/^set\.0\.path: "a\.__proto__\.b" names "__proto__"/)]);
  });

  it('refuses header names that are no header names, framing and connection headers, values HTTP cannot carry, a name twice', () => {
    expect(issues({ headers: { 'X Y': '1' } })).toEqual(['headers.X Y: must be an HTTP header name']);
    expect(issues({ headers: { 'Transfer-Encoding': 'chunked' } })).toEqual([expect.stringMatching(/^headers\.Transfer-Encoding: cannot be edited/)]);
    expect(issues({ headers: { 'Proxy-Authorization': 'x' } })).toEqual([expect.stringMatching(/^headers\.Proxy-Authorization: cannot be edited/)]);
    expect(issues({ headers: { 'X-A': 'a\nb' } })).toEqual(['headers.X-A: must not contain CR, LF or NUL characters']);
    expect(issues({ headers: { 'X-A': 'é€' } })).toEqual(['headers.X-A: may contain only tabs, printable ASCII and Latin-1 characters']);
    expect(issues({ headers: { 'X-A': 'x'.repeat(8193) } })).toEqual(['headers.X-A: must be at most 8192 characters']);
    expect(issues({ headers: { 'X-A': '1', 'x-a': '2' } })).toEqual(['headers.x-a: is the header X-A again (names are case-insensitive)']);
    expect(issues({ headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-${i}`, 'v'])) })).toEqual(['headers: must hold at most 50 headers (holds 51)']);
  });
});
