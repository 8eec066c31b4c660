import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { RejectionOut } from '@hookrelay/shared';
import { formatRejectionLine, rejectionJson } from '../src/format/listen.js';
import { plainStyle } from '../src/format/style.js';
import { ListenOutput } from '../src/listen/output.js';
import { readServerFrame } from '../src/listen/stream.js';

const rejection: RejectionOut = {
  id: '01a21f6b-9df5-7fc5-aa14-9931ddceb894',
  endpoint_kind: 'inbound',
  endpoint_id: '01a21f6b-9dc5-7a4f-a342-8d45339009e5',
  received_at: '2026-11-27T23:51:16.211Z',
  reason: 'signature_mismatch',
  detail: 'the x-hub-signature-256 header does not match the HMAC-SHA256 of the body under the endpoint\'s secret (hmac_scheme github)',
  status: 401,
  method: 'POST',
  path: '/github',
  query: 'x=1',
  raw_headers: [['x-hub-signature-256', 'sha256=00']],
  size_bytes: 12,
  body_sha256: 'ab'.repeat(32),
  body_truncated: false,
  source_address: '127.0.0.1',
};

function output(json: boolean) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const text = { out: '', err: '' };
  stdout.on('data', (chunk: Buffer) => (text.out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (text.err += chunk.toString()));
  const out = new ListenOutput({ json, style: plainStyle, stdout, stderr, apiUrl: 'http://127.0.0.1:8787', target: 'http://localhost:3000' });
  return { out, text };
}

describe('refused requests in listen and dev', () => {
  it('the stream frame is read with the shared schema; a malformed one is dropped', () => {
    expect(readServerFrame(JSON.stringify({ type: 'rejection', rejection }))).toEqual({ type: 'rejection', rejection });
    expect(readServerFrame(JSON.stringify({ type: 'rejection', rejection: { ...rejection, reason: 'bogus' } }))).toBeUndefined();
  });

  it('a line in the delivery lines\' layout: time, REFUSED, status, reason, request, what to check', () => {
    const at = new Date(2026, 10, 27, 0, 21, 47);
    expect(formatRejectionLine(rejection, plainStyle, at)).toBe(
      `00:21:47  REFUSED 401 signature_mismatch  POST /github?x=1  — ${rejection.detail}`,
    );
    const { out, text } = output(false);
    out.rejected(rejection);
    expect(text.out).toBe('');
    expect(text.err).toMatch(/ {2}REFUSED 401 signature_mismatch {2}POST \/github\?x=1 {2}— the x-hub-signature-256 header/);
  });

  it('with --json, one NDJSON object on stdout with type "rejection"', () => {
    const { out, text } = output(true);
    out.rejected(rejection);
    expect(text.err).toBe('');
    const lines = text.out.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual(rejectionJson(rejection));
    expect(JSON.parse(lines[0]!)).toEqual({
      type: 'rejection',
      rejection_id: rejection.id,
      endpoint_id: rejection.endpoint_id,
      received_at: rejection.received_at,
      status: 401,
      reason: 'signature_mismatch',
      detail: rejection.detail,
      method: 'POST',
      path: '/github',
      query: 'x=1',
      size_bytes: 12,
      source_address: '127.0.0.1',
    });
  });
});
