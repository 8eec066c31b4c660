import { describe, expect, it, vi } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { InboundResultReport, RecordedInboundResult } from '../../src/db/inbound-results.js';
import type { Sql } from '../../src/db/database.js';
import type { StreamSubscriber } from '../../src/stream/hub.js';
import type { ResultBatcher } from '../../src/stream/result-batcher.js';
import { resultReport } from '../../src/stream/result-report.js';
import { startSession, takeFrame, type StreamSession } from '../../src/stream/session.js';

const MESSAGE_ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const RESULT_ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c';

/** A session whose socket keeps the frames sent, and whose batcher answers `record` as told. */
function session(record: (report: InboundResultReport) => Promise<RecordedInboundResult | undefined>, open = true) {
  const sent: unknown[] = [];
  const socket = { OPEN: 1, readyState: open ? 1 : 3, send: (text: string) => sent.push(JSON.parse(text)) } as unknown as WebSocket;
  const recorded: { report: InboundResultReport; canWait: boolean | undefined }[] = [];
  const results = {
    record: (report: InboundResultReport, options?: { canWait?: boolean }) => {
      recorded.push({ report, canWait: options?.canWait });
      return record(report);
    },
  } as unknown as ResultBatcher;
  const counted: string[] = [];
  const log = { info: vi.fn(), warn: vi.fn() } as unknown as FastifyBaseLogger;
  const started: (string | null)[] = [];
  const subscriber = { start: (cursor: string | null) => started.push(cursor) } as unknown as StreamSubscriber;
  const s: StreamSession = {
    socket,
    subscriber,
    projectId: 'project',
    endpointId: 'endpoint',
    after: undefined,
    results,
    sql: (() => {
      throw new Error('no statement expected');
    }) as unknown as Sql,
    metrics: { countDelivery: (_kind, status) => counted.push(status) },
    log,
  };
  return { s, sent, recorded, counted, started, log: log as unknown as { info: ReturnType<typeof vi.fn>; warn: ReturnType<typeof vi.fn> } };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
const row = { status: 'delivered' } as unknown as RecordedInboundResult['row'];

describe('a stream session', () => {
  it('ignores a frame that is not JSON, and a JSON frame that is not a result, without answering', () => {
    const t = session(async () => undefined);
    takeFrame(t.s, 'not json');
    takeFrame(t.s, JSON.stringify({ type: 'hello' }));
    expect(t.sent).toEqual([]);
    expect(t.recorded).toEqual([]);
    expect(t.log.info).toHaveBeenCalledTimes(2);
  });

  it('acknowledges an invalid result that names its result id as refused, saying why', () => {
    const t = session(async () => undefined);
    takeFrame(t.s, JSON.stringify({ type: 'result', result_id: RESULT_ID.toUpperCase(), message_id: MESSAGE_ID, status: 99, latency_ms: 1, error: null }));
    expect(t.sent).toEqual([{ type: 'result_ack', result_id: RESULT_ID, outcome: 'refused', message: 'status: must be at least 100' }]);
    expect(t.recorded).toEqual([]);
  });

  it('records a result (held for others to share its commit) and acknowledges it after, by outcome', async () => {
    const outcomes: (RecordedInboundResult | undefined)[] = [{ row, duplicate: false }, { row, duplicate: true }, undefined];
    const t = session(async () => outcomes.shift());
    const frame = { type: 'result', result_id: RESULT_ID.toUpperCase(), message_id: MESSAGE_ID.toUpperCase(), status: 200, latency_ms: 12, error: null };
    for (let i = 0; i < 3; i++) takeFrame(t.s, JSON.stringify(frame));
    expect(t.sent).toEqual([]);
    await settled();
    expect(t.recorded.map((r) => r.canWait)).toEqual([true, true, true]);
    expect(t.recorded[0]!.report).toEqual({
      projectId: 'project',
      endpointId: 'endpoint',
      messageId: MESSAGE_ID,
      resultId: RESULT_ID,
      result: { status: 200, latencyMs: 12, error: null },
      answer: { listener: 'default', responseHeaders: [], responseBodyBase64: null, responseBodyTruncated: false },
      resigned: false,
    });
    expect(t.sent).toEqual([
      { type: 'result_ack', result_id: RESULT_ID, outcome: 'recorded' },
      { type: 'result_ack', result_id: RESULT_ID, outcome: 'duplicate' },
      { type: 'result_ack', result_id: RESULT_ID, outcome: 'not_found' },
    ]);
    // Only the recorded one is a delivery.
    expect(t.counted).toEqual(['delivered']);
  });

  it('acknowledges nothing for a result without an id, one that could not be recorded, or once the socket closed', async () => {
    const frame = { type: 'result', message_id: MESSAGE_ID, status: 200, latency_ms: 1, error: null };
    const anonymous = session(async () => ({ row, duplicate: false }));
    takeFrame(anonymous.s, JSON.stringify(frame));
    const failing = session(async () => {
      throw new Error('database away');
    });
    takeFrame(failing.s, JSON.stringify({ ...frame, result_id: RESULT_ID }));
    const closed = session(async () => ({ row, duplicate: false }), false);
    takeFrame(closed.s, JSON.stringify({ ...frame, result_id: RESULT_ID }));
    await settled();
    expect(anonymous.sent).toEqual([]);
    expect(anonymous.counted).toEqual(['delivered']);
    expect(failing.sent).toEqual([]);
    expect(failing.log.warn).toHaveBeenCalledTimes(1);
    expect(closed.sent).toEqual([]);
  });

  it("starts at the query's cursor: ready with it and the endpoint's newest message, then the subscriber", async () => {
    const t = session(async () => undefined);
    const newest = '0190b2c4-8000-7000-8000-0000000000ff';
    const statements: string[] = [];
    const sql = ((strings: TemplateStringsArray) => {
      statements.push(strings.join('?'));
      return Promise.resolve([{ last_message_id: newest }]);
    }) as unknown as Sql;
    await startSession({ ...t.s, sql, after: MESSAGE_ID });
    expect(t.sent).toEqual([{ type: 'ready', cursor: MESSAGE_ID, latest_message_id: newest, result_acks: true }]);
    expect(t.started).toEqual([MESSAGE_ID]);
    expect(statements).toHaveLength(1);
  });
});

describe('a result report', () => {
  it("carries the app's answer as reported", () => {
    const report = resultReport(
      { projectId: 'p', endpointId: 'e', messageId: MESSAGE_ID, resultId: null },
      { message_id: MESSAGE_ID, status: null, latency_ms: 5, error: 'refused', listener: 'api', response_headers: [['a', 'b']], response_body: 'aGk=', response_body_truncated: true, resigned: true },
    );
    expect(report).toEqual({
      projectId: 'p',
      endpointId: 'e',
      messageId: MESSAGE_ID,
      resultId: null,
      result: { status: null, latencyMs: 5, error: 'refused' },
      answer: { listener: 'api', responseHeaders: [['a', 'b']], responseBodyBase64: 'aGk=', responseBodyTruncated: true },
      resigned: true,
    });
  });

  it('of an old CLI says the message went as it arrived', () => {
    expect(resultReport({ projectId: 'p', endpointId: 'e', messageId: MESSAGE_ID, resultId: null }, { message_id: MESSAGE_ID, status: 200, latency_ms: 5, error: null }).resigned).toBe(false);
  });
});
