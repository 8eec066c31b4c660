import type { InboundEndpointCreateOut, InboundEndpointOut, InboundLogRecordOut } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { formatCreatedInboundEndpoint, formatInboundEndpoint, formatInboundEndpointTable, verificationSummary } from '../src/format/inbound-endpoints.js';
import { formatInboundLogLine, formatInboundLogTable } from '../src/format/inbound-logs.js';
import { formatBatchDeleteResult } from '../src/format/inbound-messages.js';
import { plainStyle } from '../src/format/style.js';

const now = new Date('2026-05-01T12:00:00.000Z');
const ID = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const INGEST = 'http://localhost:8787/in/0123456789abcdef0123456789abcdef';

const created: InboundEndpointCreateOut = {
  id: ID,
  name: 'github',
  url: '',
  mode: 'cli',
  ingest_url: INGEST,
  secret_token: '0123456789abcdef0123456789abcdef',
  ephemeral: false,
  expires_at: null,
  created_at: '2026-05-01T11:00:00.000Z',
};

const endpoint: InboundEndpointOut = {
  id: ID,
  name: 'github',
  description: '',
  url: 'https://example.com/hook',
  mode: 'forward',
  active: true,
  paused: true,
  verify_static_token: true,
  static_token_header_name: 'X-Token',
  static_token_query_param: null,
  verify_hmac: true,
  hmac_scheme: 'hex',
  hmac_header_name: 'X-Sig',
  timestamp_header_name: 'X-Ts',
  timestamp_tolerance_seconds: 300,
  verify_ip_allowlist: false,
  allowed_cidrs: ['10.0.0.0/8'],
  ingest_response_code: 202,
  max_body_bytes: null,
  retention_days: null,
  idempotency_header_names: ['X-Id'],
  signing_enabled: false,
  signing_key_id: null,
  key_hint: null,
  resign_late: true,
  ingest_url: INGEST,
  ephemeral: true,
  expires_at: '2026-05-01T12:30:00.000Z',
  rejected_count: 1,
  rejections_dropped_count: 0,
  event_type_source: null,
  event_type_path: null,
  connected_listeners: 0,
  messages_24h: 0,
  created_at: '2026-05-01T11:00:00.000Z',
  updated_at: '2026-05-01T11:30:00.000Z',
};

function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

describe('inbound endpoint output', () => {
  it('create shows the ingest URL on a line of its own, with what the token is worth', () => {
    const text = formatCreatedInboundEndpoint(created, plainStyle, now);
    expect(text).toMatch(new RegExp(`^  ${INGEST}$`, 'mu'));
    expect(count(text, INGEST)).toBe(1);
    expect(text).toMatch(/secret token: anyone who has it can post/u);
    expect(text).toMatch(/hookrelay listen 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --forward-to 3000/u);
    expect(text).not.toMatch(/Signing secret/u);
  });

  it('create shows a signing secret exactly once, with a warning', () => {
    const secret = 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0';
    const text = formatCreatedInboundEndpoint({ ...created, signing_key_id: 'sk_1', signing_secret: secret, key_hint: 'cmV0' }, plainStyle, now);
    expect(count(text, secret)).toBe(1);
    expect(text).toMatch(/shown only once/u);
    expect(text).toMatch(/will not show this secret again/u);
  });

  it('get summarises the checks that are on and never shows a secret field', () => {
    const text = formatInboundEndpoint(endpoint, plainStyle, now);
    expect(text).toMatch(/^Verification:\s+static token \(header X-Token\); HMAC \(hex, header X-Sig, timestamp X-Ts ±300s\)$/mu);
    expect(text).toMatch(/^Status:\s+paused$/mu);
    expect(text).toMatch(/^Response code:\s+202$/mu);
    expect(text).toMatch(/^Rejected:\s+1 request failed verification$/mu);
    expect(text).toContain(INGEST);
    expect(text).toMatch(/^Expires:\s+2026-05-01T12:30:00.000Z \(in 30m\)$/mu);
  });

  it('summarises no checks as none, and an IP allowlist with its blocks', () => {
    const none = { ...endpoint, verify_static_token: false, verify_hmac: false };
    expect(verificationSummary(none)).toBe('none');
    expect(verificationSummary({ ...none, verify_ip_allowlist: true })).toBe('IP allowlist (10.0.0.0/8)');
  });

  it('lists endpoints as a table without ingest URLs', () => {
    const text = formatInboundEndpointTable([{ id: ID, name: 'github', description: '', url: '', mode: 'cli', active: true, paused: false, ephemeral: false, expires_at: null, connected_listeners: 0, messages_24h: 0, created_at: '2026-05-01T11:00:00.000Z' }], plainStyle, now);
    const [header, row] = text.split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+MODE\s+STATUS\s+EXPIRES\s+CREATED\s+URL$/u);
    expect(row).toMatch(new RegExp(`^${ID}\\s+github\\s+cli\\s+active\\s+-\\s+\\S+\\s+-$`, 'u'));
  });
});

describe('inbound logs output', () => {
  const row: InboundLogRecordOut = {
    message_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    inbound_endpoint_id: ID,
    endpoint: '',
    status: 'failed_permanent',
    attempt_count: 1,
    received_at: '2026-05-01T11:59:00.000Z',
    response_status: 500,
    response_latency_ms: 12,
    last_error: 'HTTP 500',
    total_delivery_ms: 15,
  };

  it('has an endpoint column only when the list is not of one endpoint', () => {
    expect(formatInboundLogTable([row], plainStyle, { showEndpoint: true }).split('\n')[0]).toMatch(/^RECEIVED\s+MESSAGE\s+ENDPOINT\s+STATUS\s+ATTEMPTS\s+RESPONSE\s+LATENCY\s+ERROR$/u);
    expect(formatInboundLogTable([row], plainStyle, { showEndpoint: false }).split('\n')[0]).not.toContain('ENDPOINT');
  });

  it('prints a followed row on one line', () => {
    expect(formatInboundLogLine(row, plainStyle)).toBe(
      `2026-05-01T11:59:00.000Z  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71  failed_permanent  500  12 ms  endpoint ${ID}  HTTP 500`,
    );
  });
});

describe('batch delete output', () => {
  it('lists each outcome and the counts', () => {
    const text = formatBatchDeleteResult(
      {
        results: [
          { message_id: 'a', outcome: 'deleted', deleted_at: '2026-05-01T12:00:00.000Z' },
          { message_id: 'b', outcome: 'not_found' },
        ],
        deleted_count: 1,
        already_deleted_count: 0,
        not_found_count: 1,
      },
      plainStyle,
    );
    expect(text).toBe('a  deleted\nb  not_found\n1 deleted, 0 already deleted, 1 not found');
  });
});
