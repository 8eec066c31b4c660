import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirmDeletion } from '../src/confirm-delete.js';
import * as account from '../src/format/account.js';
import * as batch from '../src/format/batch.js';
import * as bulkJobs from '../src/format/bulk-jobs.js';
import * as endpoints from '../src/format/endpoints.js';
import * as error from '../src/format/error.js';
import * as eventTypes from '../src/format/event-types.js';
import * as events from '../src/format/events.js';
import * as inboundEndpoints from '../src/format/inbound-endpoints.js';
import * as inboundLogs from '../src/format/inbound-logs.js';
import * as inboundMessages from '../src/format/inbound-messages.js';
import * as listen from '../src/format/listen.js';
import * as messages from '../src/format/messages.js';
import * as portalLinks from '../src/format/portal-links.js';
import * as pull from '../src/format/pull.js';
import * as rejections from '../src/format/rejections.js';
import { createStyle, plainStyle, type Style } from '../src/format/style.js';
import { formatTable } from '../src/format/table.js';
import { terminalSafe, terminalText } from '../src/format/text.js';
import * as trigger from '../src/format/trigger.js';
import { ListenOutput } from '../src/listen/output.js';

/**
 * A server's or a sender's text reaches the terminal escaped: no control character of theirs is
 * ever written raw (--json has JSON's escaping). The fence: every function that src/format exports
 * is either run here with every string of its input hostile, or listed as taking no such text.
 */

/** Every C0 control except the line feed that formatters put between lines, DEL, every C1 control. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/u;
/** What chalk writes: SGR sequences only. */
// eslint-disable-next-line no-control-regex
const SGR = /\u001b\[[0-9;]*m/gu;

/** Retitles the terminal, clears it, 8-bit CSI, DEL, NEL, then a forged line after CR LF. */
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b2J\u007f\u0085\t\r\nFORGED 12:00:00  POST /x  200';

/** Every string of `value` prefixed with HOSTILE (bodies aside: they are tested as blocks below). */
function hostile<T>(value: T): T {
  const walk = (item: unknown, key?: string): unknown => {
    if (typeof item === 'string') return key === 'body' ? item : `${HOSTILE}${item}`;
    if (Buffer.isBuffer(item) || item === null || typeof item !== 'object') return item;
    if (Array.isArray(item)) return item.map((entry) => walk(entry));
    return Object.fromEntries(Object.entries(item).map(([name, entry]) => [name, walk(entry, name)]));
  };
  return walk(value) as T;
}

const ID = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const TIME = '2026-11-27T23:51:16.211Z';
const NOW = new Date(TIME);

/** One record with every field the formatters read, of every resource; each formatter takes what it needs. */
const RECORD = {
  id: ID, message_id: ID, event_id: ID, endpoint_id: ID, inbound_endpoint_id: ID, project_id: ID, project_name: 'default', api_key_id: ID,
  api_url: 'http://127.0.0.1:8787', profile: 'default', config_path: '/home/me/.config/hookrelay/config.json', current_profile: 'default',
  profiles: [{ name: 'default', current: true, api_url: 'http://127.0.0.1:8787', api_key_hint: 'hr_…a1b2' }],
  url: 'https://example.com/hook', description: 'a description', name: 'an endpoint', mode: 'cli', status: 'queued', paused: false, ephemeral: true,
  expires_at: TIME, created_at: TIME, updated_at: TIME, received_at: TIME, fetched_at: TIME, delivered_at: TIME, deleted_at: TIME, failed_at: TIME,
  first_attempt_at: TIME, next_attempt_at: TIME, started_at: TIME, previous_key_expires_at: TIME,
  rate_limit_rps: 1, burst: 1, headers: { 'x-custom': 'value' }, signing_key_id: ID, key_hint: 'a1b2', signing_secret: 'whsec_abc',
  ingest_url: 'https://hooks.example.com/in/token', full_ingest_url: 'https://hooks.example.com/in/token', secret_token: 'token',
  verify_static_token: true, static_token_header_name: 'x-token', static_token_query_param: 'token', verify_hmac: true, hmac_scheme: 'hex',
  hmac_header_name: 'x-signature', timestamp_header_name: 'x-timestamp', timestamp_tolerance_seconds: 300, verify_ip_allowlist: true,
  allowed_cidrs: ['10.0.0.0/8'], idempotency_header_names: ['x-delivery'], response_code: 200, max_body_bytes: null, signing_enabled: true,
  rejected_count: 1, rejections_dropped_count: 1, connected_listeners: 0, latest_message_id: ID, retention_days: 7,
  event_type_source: 'header', event_type_path: 'x-event', event_counts: { stored: 1, fetched: 1, delivered: 1, deleted: 1 },
  method: 'POST', path: '/github/push', query: 'a=1', raw_headers: [['x-github-event', 'push']], content_type: 'application/json', size_bytes: 7,
  payload_sha256: 'ab'.repeat(32), event_type: 'push', idempotency_key: 'key-1', attempt_count: 2, replay_count: 1, response_status: 500,
  response_latency_ms: 3, last_error: 'connection refused', endpoint: 'https://example.com/hook', processing_ms: 1, total_delivery_ms: 2, queue_wait_ms: 1,
  body: Buffer.from('{"a":1}').toString('base64'), body_encoding: 'base64',
  results: [{ message_id: ID, event_id: ID, outcome: 'deleted', deleted_at: TIME }], deleted_count: 1, already_deleted_count: 0, not_found_count: 0,
  delivered_count: 1, already_delivered_count: 0, deleted: 1, deleted_event_ids: [ID], already_deleted: false, already_delivered: false,
  reason: 'signature_mismatch', detail: 'the x-signature header does not match', source_address: '203.0.113.9',
  attempt_number: 1, latency_ms: 3, error: 'timeout', response_body: 'oops',
  cursor: ID, attempt: 2, replay: true, target: 'http://localhost:3000',
  response: { headers: [['content-type', 'text/plain']], body: Buffer.from('fine\n'), truncated: true },
  resigned: false, signed_at: TIME, resign_skipped: 'no_secret', replay_of: ID, edited: true, signed: false,
  q: 'cus_1', received_after: TIME, received_before: TIME, bodies: 'inline', scan_limit: 100000, scan_limit_reached: true,
  provider: 'github', event: 'push', signature_header: 'x-hub-signature-256', ingest_status: 200, duplicate: false, signed_by: 'server',
  owner_id: 'acme', read_only: true, token: 'hrp_token', revoked_at: TIME, event_types: ['invoice.*'], channels: ['eu'], message_count: 1, archived: false, schema: { type: 'object' }, example: { amount: 1 },
  messages: [{ message_id: ID, endpoint_id: ID, status: 'pending_retry', attempt_count: 1, response_status: 500, last_error: 'HTTP 500' }],
  kind: 'outbound', matched: 3, done: 1, skipped: 1, failed: 1, finished_at: TIME,
  filter: { endpoint_id: ID, owner_id: 'acme', inbound_endpoint_id: ID, event_type: 'push', status: ['failed_permanent'], created_after: TIME, created_before: TIME, received_after: TIME, received_before: TIME },
  code: 'INTERNAL_ERROR', message: 'it failed', exitCode: 6, requestId: 'req-1', hint: 'try again', details: [{ path: 'body.url', message: 'is bad' }],
};

type Formatter = (record: never, style: Style) => string | string[];
const one = (fn: (record: never, style: Style, now: Date) => string | string[]): Formatter => (record, style) => fn(record, style, NOW);
const rows = (fn: (rows: never[], style: Style, now: Date) => string): Formatter => (record, style) => fn([record], style, NOW);

/** Formatters of a body alone: HOSTILE leaves bodies be, so only "no raw control" applies (bodies are tested below). */
const BODY_ONLY = new Set(['inbound-messages.formatMessageBody', 'messages.formatMessagePayload', 'listen.formatAnswerPreview', 'messages.formatJsonBlock']);

/** Every formatter that shows a client's text, run on RECORD. */
const CASES: Record<string, Formatter> = {
  'account.formatWhoami': (r, s) => account.formatWhoami(r, 'profile', s),
  'account.formatLogin': one(account.formatLogin),
  'account.formatProfiles': one(account.formatProfiles),
  'bulk-jobs.formatBulkJob': one(bulkJobs.formatBulkJob),
  'bulk-jobs.formatJobOutcome': one(bulkJobs.formatJobOutcome),
  'bulk-jobs.formatBulkJobTable': rows(bulkJobs.formatBulkJobTable),
  'batch.formatBatchOutcomes': (r: { results: never[]; message: string }, s) => batch.formatBatchOutcomes(r.results, 'message_id', r.message, s),
  'endpoints.formatCreatedEndpoint': one(endpoints.formatCreatedEndpoint),
  'endpoints.formatEndpoint': one(endpoints.formatEndpoint),
  'endpoints.formatEndpointTable': rows(endpoints.formatEndpointTable),
  'endpoints.formatPauseResult': one(endpoints.formatPauseResult),
  'endpoints.formatRotatedSecret': (r: { id: string }, s) => endpoints.formatRotatedSecret(r.id, r as never, s, NOW),
  'error.formatFailure': one(error.formatFailure),
  'event-types.formatEventType': one(eventTypes.formatEventType),
  'event-types.formatEventTypeTable': rows(eventTypes.formatEventTypeTable),
  'event-types.formatEventTypeDeleted': one(eventTypes.formatEventTypeDeleted),
  'events.formatEventAccepted': one(events.formatEventAccepted),
  'events.formatEvent': one(events.formatEvent),
  'events.formatFanOutTable': (r: { messages: never[] }, s) => events.formatFanOutTable(r.messages, s),
  'events.formatEventTable': rows(events.formatEventTable),
  'inbound-endpoints.verificationSummary': (r) => inboundEndpoints.verificationSummary(r),
  'inbound-endpoints.formatCreatedInboundEndpoint': one(inboundEndpoints.formatCreatedInboundEndpoint),
  'inbound-endpoints.formatInboundEndpoint': one(inboundEndpoints.formatInboundEndpoint),
  'inbound-endpoints.formatInboundEndpointTable': rows(inboundEndpoints.formatInboundEndpointTable),
  'inbound-endpoints.formatInboundPauseResult': one(inboundEndpoints.formatInboundPauseResult),
  'inbound-endpoints.formatInboundRotatedSecret': (r: { id: string }, s) => inboundEndpoints.formatInboundRotatedSecret(r.id, r as never, s, NOW),
  'inbound-logs.formatInboundLogTable': (r, s) => inboundLogs.formatInboundLogTable([r], s, { showEndpoint: true }),
  'inbound-logs.formatInboundLogLine': one(inboundLogs.formatInboundLogLine),
  'inbound-messages.formatMessageStatus': (r: { status: string }, s) => inboundMessages.formatMessageStatus(r.status, s),
  'inbound-messages.formatMessageBody': (r, s) => inboundMessages.formatMessageBody(r as never, s),
  'inbound-messages.formatInboundMessage': one(inboundMessages.formatInboundMessage),
  'inbound-messages.formatReplay': (r, s) => inboundMessages.formatReplay(r, s),
  'inbound-messages.formatInboundMessageDeleted': one(inboundMessages.formatInboundMessageDeleted),
  'inbound-messages.formatBatchDeleteResult': one(inboundMessages.formatBatchDeleteResult),
  'inbound-messages.formatEndpointMessageTable': rows(inboundMessages.formatEndpointMessageTable),
  'inbound-messages.formatSearchNote': one(inboundMessages.formatSearchNote),
  'listen.formatDeliveryLine': (r, s) => listen.formatDeliveryLine(r, s, NOW, true),
  'listen.formatResponseLines': one(listen.formatResponseLines),
  'listen.formatAnswerPreview': one(listen.formatAnswerPreview as never),
  'listen.formatLateSignatureLine': (r, s) => listen.formatLateSignatureLine(r, s, NOW, 'EP') ?? '',
  'listen.formatRejectionLine': one(listen.formatRejectionLine),
  'messages.formatMessageCreated': (r: { id: string }, s) => messages.formatMessageCreated(r as never, r.id, s),
  'messages.formatMessagePayload': one(messages.formatMessagePayload),
  'messages.formatJsonBlock': (r, s) => messages.formatJsonBlock(r, s),
  'messages.formatMessage': one(messages.formatMessage),
  'messages.formatAttemptTable': rows(messages.formatAttemptTable),
  'messages.formatMessageRetry': one(messages.formatMessageRetry),
  'messages.formatMessageDeleted': one(messages.formatMessageDeleted),
  'messages.formatMessageBatchDeleted': one(messages.formatMessageBatchDeleted),
  'messages.formatLogTable': (r, s) => messages.formatLogTable([r], s, { showEndpoint: true }),
  'messages.formatLogLine': one(messages.formatLogLine),
  'portal-links.formatPortalLinkCreated': one(portalLinks.formatPortalLinkCreated),
  'portal-links.formatPortalLinkTable': rows(portalLinks.formatPortalLinkTable),
  'portal-links.formatPortalLinkRevoked': one(portalLinks.formatPortalLinkRevoked),
  'pull.formatCreatedPullEndpoint': one(pull.formatCreatedPullEndpoint),
  'pull.formatPullEndpoint': one(pull.formatPullEndpoint),
  'pull.formatPullEndpointTable': rows(pull.formatPullEndpointTable),
  'pull.formatPullPauseResult': one(pull.formatPullPauseResult),
  'pull.formatPullEventTable': rows(pull.formatPullEventTable),
  'pull.formatPullEvent': one(pull.formatPullEvent),
  'pull.formatPullEventAck': one(pull.formatPullEventAck),
  'pull.formatPullEventAckBatch': one(pull.formatPullEventAckBatch),
  'pull.formatPullEventDeleted': one(pull.formatPullEventDeleted),
  'pull.formatPullEventBatchDeleted': one(pull.formatPullEventBatchDeleted),
  'pull.formatDeleteAll': one(pull.formatDeleteAll),
  'rejections.formatRejectionTable': rows(rejections.formatRejectionTable),
  'rejections.formatRejectionRow': one(rejections.formatRejectionRow),
  'trigger.formatSampleList': rows(trigger.formatSampleList),
  'trigger.formatSampleSent': one(trigger.formatSampleSent),
};

/** Exports that take no client text of their own, and why. */
const EXEMPT = new Map<string, string>([
  ['inbound-endpoints.bodyLimitLabel', 'a number'],
  ['bulk-jobs.messageCount', 'a number'],
  ['bulk-jobs.settledCount', 'numbers'],
  ['bulk-jobs.formatEstimate', "a number and the command's verb"],
  ['bulk-jobs.formatProgress', "numbers and the CLI's own bar"],
  ['inbound-endpoints.expiryLabel', 'called by formatters on escaped records'],
  ['key-value.formatKeyValues', "the formatters' pairs, whose values they have escaped"],
  ['listen.formatClock', 'a date'],
  ['listen.formatStatus', 'a number'],
  ['listen.formatLateness', 'a number'],
  ['listen.formatStateLine', "ListenOutput's own lines, escaped where they quote the server"],
  ['listen.deliveryJson', '--json: JSON escapes'],
  ['listen.rejectionJson', '--json: JSON escapes'],
  ['listen.formatGapText', 'two numbers'],
  ['listen.gapJson', '--json: two numbers'],
  ['style.colorLevel', 'settings'],
  ['style.createStyle', 'settings'],
  ['style.plainStyle', 'a chalk instance'],
  ['table.formatTable', 'escapes every cell itself (tested below)'],
  ['text.visibleWidth', 'a measure'],
  ['text.padEnd', 'a layout helper of formatted text'],
  ['text.truncate', 'a layout helper of formatted text'],
  ['text.terminalText', 'the helper'],
  ['text.terminalSafe', 'the helper'],
  ['text.shellQuote', 'quotes for the shell; its callers escape the text before or after'],
  ['time.formatRelative', 'called by formatters on escaped records'],
  ['time.formatTimestamp', 'called by formatters on escaped records'],
  ['time.formatDuration', 'a number'],
]);

function expectNoRawControls(output: string, name: string): void {
  expect(RAW_CONTROL.exec(output), `${name}: ${JSON.stringify(output)}`).toBeNull();
  // CR/LF never start a line of the client's.
  for (const line of output.split('\n')) expect(line.trimStart().startsWith('FORGED'), `${name}: ${JSON.stringify(line)}`).toBe(false);
}

describe('terminalText', () => {
  it('escapes every C0 control, DEL and every C1 control visibly, and nothing else', () => {
    for (let code = 0; code <= 0x9f; code++) {
      const char = String.fromCharCode(code);
      const escaped = terminalText(`a${char}b`);
      if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) {
        expect(RAW_CONTROL.test(escaped) || escaped.includes('\n'), `U+${code.toString(16)}`).toBe(false);
        expect(escaped).toMatch(/^a\\(x[0-9a-f]{2}|n|r|t)b$/u);
      } else {
        expect(escaped).toBe(`a${char}b`);
      }
    }
    expect(terminalText('\u001b]0;t\u0007 \u009b2J \u007f \r\n')).toBe('\\x1b]0;t\\x07 \\x9b2J \\x7f \\r\\n');
    expect(terminalText('ünïcødé ✓ \u00a0')).toBe('ünïcødé ✓ \u00a0');
  });

  it('is idempotent, and in a block keeps LF and CRLF as lines and escapes a lone CR', () => {
    expect(terminalText(terminalText(HOSTILE))).toBe(terminalText(HOSTILE));
    expect(terminalText('one\r\ntwo\nthree\rfour\u001b', { lines: true })).toBe('one\ntwo\nthree\\rfour\\x1b');
  });

  it('terminalSafe escapes every string of a record, names of keys too, and leaves its prototype alone', () => {
    const record = JSON.parse('{"__proto__":{"polluted":"\\u001b"},"a":["\\u009b"],"h":{"x\\u001b":"\\r\\n"},"n":1,"body":"\\u001b"}') as Record<string, unknown>;
    const safe = terminalSafe(record);
    expect(safe).toEqual(JSON.parse('{"__proto__":{"polluted":"\\\\x1b"},"a":["\\\\x9b"],"h":{"x\\\\x1b":"\\\\r\\\\n"},"n":1,"body":"\\u001b"}'));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(safe)).toBe(Object.prototype);
  });
});

describe('every formatter escapes what the server and the sender wrote', () => {
  it('each function of src/format is run here or named as taking no client text', async () => {
    const dir = new URL('../src/format/', import.meta.url);
    const exported: string[] = [];
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.ts'))) {
      const module = (await import(new URL(file, dir).href)) as Record<string, unknown>;
      for (const [name, value] of Object.entries(module)) if (typeof value === 'function') exported.push(`${file.replace(/\.ts$/u, '')}.${name}`);
    }
    const unlisted = exported.filter((name) => !(name in CASES) && !EXEMPT.has(name));
    expect(unlisted).toEqual([]);
    expect(Object.keys(CASES).filter((name) => !exported.includes(name))).toEqual([]);
  });

  for (const [name, format] of Object.entries(CASES)) {
    it(name, () => {
      for (const style of [plainStyle, createStyle(1)]) {
        const raw = format(hostile(RECORD) as never, style);
        const output = (Array.isArray(raw) ? raw.join('\n') : raw).replace(SGR, '');
        expectNoRawControls(output, name);
        if (!BODY_ONLY.has(name)) expect(output, name).toContain('\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J\\x7f\\x85\\t\\r\\nFORGED');
      }
    });
  }

  it('bodies keep their lines and lose their controls: a text body, a JSON payload, a local app answer', () => {
    // C0 controls other than white space, and DEL, make a body binary (its size is shown); the C1 ones are escaped.
    const text = Buffer.from(`line one\r\nline two\u009b2J\u0085\nthree\rX`).toString('base64');
    expect(inboundMessages.formatMessageBody({ body: text, body_encoding: 'base64', size_bytes: 9 } as never, plainStyle)).toBe('line one\nline two\\x9b2J\\x85\nthree\\rX');
    const binary = Buffer.from('\u001b]0;t\u0007').toString('base64');
    expect(inboundMessages.formatMessageBody({ body: binary, body_encoding: 'base64', size_bytes: 6 } as never, plainStyle)).toBe('(binary, 6 bytes; --json shows it as base64)');
    expect(inboundMessages.formatMessageBody({ body: { k: 'a\u009b' } } as never, plainStyle)).toBe('{\n  "k": "a\\x9b"\n}');
    expect(messages.formatMessagePayload({ payload: { k: 'a\u009bb\u007f\n' } } as never, plainStyle)).toBe('{\n  "k": "a\\x9bb\\x7f\\n"\n}');
    expect(messages.formatMessagePayload({ body: 'x\u001b]52;c;aGk=\u0007\ny' } as never, plainStyle)).toBe('x\\x1b]52;c;aGk=\\x07\ny');
    const record = { ...RECORD, response: { headers: [['x\u001b', 'v\r\nFORGED']], body: Buffer.from('ok\u009b\n'), truncated: false } };
    expect(listen.formatResponseLines(record as never, plainStyle)).toEqual(['    x\\x1b: v\\r\\nFORGED', '    ok\\x9b', '    ']);
    const refused = { ...RECORD, status: 400, response: { headers: [], body: Buffer.from('no\u009b\r\nFORGED\u001b[2J'), truncated: false } };
    expect(listen.formatAnswerPreview(refused as never, plainStyle)).toBe('    ↳ no\\x9b\\r\\nFORGED\\x1b[2J');
  });

  it("an event no endpoint took: the endpoints list it suggests quotes the server's owner and type escaped", () => {
    const event = { ...hostile(RECORD), messages: [] } as never;
    for (const output of [events.formatEventAccepted(event, plainStyle), events.formatEvent(event, plainStyle, NOW)]) {
      expectNoRawControls(output, 'no messages');
      expect(output).toMatch(/hookrelay endpoints list --owner '\\x1b\]0;pwned\\x07.*acme' --event-type \\x1b/u);
    }
  });

  it('formatTable escapes every cell, whatever the column function returns', () => {
    const table = formatTable([{ header: 'A', value: (r: { a: string }) => r.a }], [{ a: '\u001b[2J\r\nFORGED' }], plainStyle);
    expect(table).toBe('A\n\\x1b[2J\\r\\nFORGED');
  });
});

describe("listen's own lines", () => {
  it('quote the reasons the server gives escaped: warnings, reconnects, the last line', () => {
    let written = '';
    const stderr = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.toString('utf8');
        done();
      },
    });
    const output = new ListenOutput({ json: false, style: plainStyle, stdout: stderr, stderr, apiUrl: 'http://127.0.0.1:8787', target: '3000', now: () => NOW });
    output.disconnected({ transport: 'websocket', reason: `closed (${HOSTILE})` });
    output.reconnecting({ delayMs: 1000, reason: HOSTILE });
    output.fallback({ reason: HOSTILE, retryWebSocketMs: 30_000 });
    output.warning(HOSTILE);
    output.stopped(`stopped after ${HOSTILE}`);
    expectNoRawControls(written, 'ListenOutput');
    expect(written.split('\n').filter((line) => line !== '')).toHaveLength(5);
    expect(written.match(/\\x9b2J/gu)).toHaveLength(5);
  });
});

describe('commands', () => {
  it("print an answer's text only through a formatter or terminalText", () => {
    const dir = new URL('../src/', import.meta.url);
    const offending: string[] = [];
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.parentPath.includes('/format')) continue;
      const file = join(entry.parentPath, entry.name);
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, index) => {
          // A human line (print, note, a write to a stream) that interpolates an answer or an error.
          if (/\b(print|note|write)\(/u.test(line) && /\$\{(data|result|row|record|error|rejection|message)\b/u.test(line) && !line.includes('terminalText(')) {
            offending.push(`${relative(fileURLToPath(dir), file)}:${index + 1}: ${line.trim()}`);
          }
        });
    }
    expect(offending).toEqual([]);
  });
});

describe('a delete confirmation', () => {
  it("asks with the server's text escaped", async () => {
    let written = '';
    const output = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.toString('utf8');
        done();
      },
    });
    const input = new PassThrough();
    const asked = confirmDeletion({ force: false, interactive: true, subject: 'x', question: () => `Delete inbound endpoint "${HOSTILE}"?`, streams: { input, output } });
    input.write('n\n');
    await expect(asked).rejects.toMatchObject({ code: 'ABORTED' });
    expect(written).toContain('Delete inbound endpoint "\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J\\x7f\\x85\\t\\r\\nFORGED');
    expect(written).not.toContain('\u001b]0;pwned');
    expect(written).not.toContain('\u009b');
  });
});
