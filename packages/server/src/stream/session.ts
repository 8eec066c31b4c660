import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { RESULT_ACKS_MAX, StreamResultFrame, Uuid, type ResultAckOutcome, type StreamResultAckFrame } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { findInboundLastMessageId } from '../db/inbound-endpoints.js';
import type { Metrics } from '../metrics/index.js';
import { streamFrameText } from './frames.js';
import type { StreamSubscriber } from './hub.js';
import type { ResultBatcher } from './result-batcher.js';
import { resultReport } from './result-report.js';

/** Enough of a frame that is not a valid result to acknowledge it as refused: its type and its result id. */
const IdentifiedResult = z.object({ type: z.literal('result'), result_id: Uuid });

/** One CLI's stream once its WebSocket is open: what its frames need, and where its messages start. */
export interface StreamSession {
  socket: WebSocket;
  /** Registered with the hub before the session starts, so that no commit in between is missed. */
  subscriber: StreamSubscriber;
  projectId: string;
  endpointId: string;
  /** The `after` of the stream's query (lowercase); without it the stream starts after the endpoint's last message. */
  after: string | undefined;
  results: ResultBatcher;
  /** The client asked for its acknowledgements in `result_acks` frames (RESULT_ACK_BATCHES_HEADER). */
  batchAcks?: boolean;
  /** The acknowledgements settled in this turn, not yet sent (with batchAcks). */
  pendingAcks?: Ack[] | undefined;
  sql: Sql;
  metrics: Pick<Metrics, 'countDelivery'>;
  log: FastifyBaseLogger;
}

/** The first problem of an invalid result frame, as `field: message`. */
function frameProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'not a valid result frame';
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

type Ack = Omit<StreamResultAckFrame, 'type'>;

function sendAcks(session: Pick<StreamSession, 'socket' | 'pendingAcks'>): void {
  const { socket } = session;
  const acks = session.pendingAcks;
  session.pendingAcks = undefined;
  if (acks === undefined || socket.readyState !== socket.OPEN) return;
  for (let i = 0; i < acks.length; i += RESULT_ACKS_MAX) socket.send(streamFrameText({ type: 'result_acks', acks: acks.slice(i, i + RESULT_ACKS_MAX) }));
}

/**
 * After the commit that settled it (never before): the CLI forgets a report once acknowledged. The
 * reports of one commit settle in the same turn, so a client that takes batches gets them in one
 * frame, sent once the turn's callbacks have run: a frame, a send and a read each instead of one
 * per webhook.
 */
function acknowledge(session: Pick<StreamSession, 'socket' | 'batchAcks' | 'pendingAcks'>, resultId: string, outcome: ResultAckOutcome, message?: string): void {
  const { socket } = session;
  if (socket.readyState !== socket.OPEN) return;
  const ack: Ack = { result_id: resultId, outcome };
  if (message !== undefined) ack.message = message;
  if (session.batchAcks !== true) {
    socket.send(streamFrameText({ type: 'result_ack', ...ack }));
    return;
  }
  if (session.pendingAcks !== undefined) {
    session.pendingAcks.push(ack);
    return;
  }
  session.pendingAcks = [ack];
  setImmediate(() => sendAcks(session));
}

/** A text frame from the CLI: a result report is recorded and acknowledged; anything else is ignored. */
export function takeFrame(session: StreamSession, text: string): void {
  const { socket, endpointId, log } = session;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    log.info({ inbound_endpoint_id: endpointId }, 'ignored a stream frame that is not JSON');
    return;
  }
  const checked = StreamResultFrame.safeParse(parsed);
  if (!checked.success) {
    const identified = IdentifiedResult.safeParse(parsed);
    log.info({ inbound_endpoint_id: endpointId }, 'ignored a stream frame that is not a result');
    // Refused for good: acknowledged, so that the CLI does not send it again at every reconnection.
    if (identified.success) acknowledge(session, identified.data.result_id.toLowerCase(), 'refused', frameProblem(checked.error));
    return;
  }
  const frame = checked.data;
  const resultId = frame.result_id?.toLowerCase() ?? null;
  const report = resultReport({ projectId: session.projectId, endpointId, messageId: frame.message_id.toLowerCase(), resultId }, frame);
  // A report that cannot be recorded (the database is away) is not acknowledged: the CLI sends it again.
  session.results
    .record(report, { canWait: true })
    .then((recorded) => {
      if (recorded !== undefined && !recorded.duplicate) session.metrics.countDelivery('cli', recorded.row.status);
      if (resultId !== null) acknowledge(session, resultId, recorded === undefined ? 'not_found' : recorded.duplicate ? 'duplicate' : 'recorded');
    })
    .catch((error: unknown) => log.warn({ err: error }, 'could not record a stream result'));
}

/**
 * Sends `ready` with the start cursor and the endpoint's newest message, and starts the subscriber
 * there. The subscriber was registered first, then the newest message is read: a commit in between
 * still wakes the stream, and what it commits after the read is newer than `latest_message_id`.
 */
export async function startSession(session: StreamSession): Promise<void> {
  const latest = (await findInboundLastMessageId(session.sql, session.projectId, session.endpointId)) ?? null;
  const cursor = session.after ?? latest;
  session.socket.send(streamFrameText({ type: 'ready', cursor, latest_message_id: latest, result_acks: true, ...(session.batchAcks === true ? { result_ack_batches: true } : {}) }));
  session.subscriber.start(cursor);
}

/**
 * Runs a stream's session on its open socket: every frame counts as a sign of life (`heardFrom`),
 * text frames are taken as result reports, and the stream starts. A start that fails closes the
 * socket with 1011.
 */
export function runStreamSession(session: StreamSession, heardFrom: () => void): void {
  const { socket, log } = session;
  socket.on('message', (data, isBinary) => {
    heardFrom();
    if (!isBinary) takeFrame(session, data.toString());
  });
  startSession(session).catch((error: unknown) => {
    log.warn({ err: error }, 'stream could not start');
    socket.close(1011, 'internal error');
  });
}
