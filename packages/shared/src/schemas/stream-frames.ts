import { z } from 'zod';
import { Uuid } from './common.js';
import { answerShape, CliMessageOut, resultIdShape, resultShape } from './inbound.js';
import { RejectionFrame } from './rejections.js';

/* The frames of an inbound endpoint's CLI stream (docs/api.md, the stream protocol), in both directions. */

/**
 * Server → client, first frame: the stream is open after `cursor` (null when it starts from now).
 * `result_acks`: the server answers each result frame that carries a `result_id` with a
 * `result_ack` frame once the report is committed (a server without it ignores `result_id`, and
 * refuses a frame that carries one).
 */
/**
 * Server → client, first: where the stream starts (`cursor`), and the endpoint's newest message as it
 * starts (`latest_message_id`, null when it has none; absent from servers before it existed): what
 * arrives after is newer, so the client knows where the catch-up of a reconnection ends.
 */
export const StreamReadyFrame = z.object({
  type: z.literal('ready'),
  cursor: Uuid.nullable(),
  latest_message_id: Uuid.nullable().optional(),
  result_acks: z.boolean().optional(),
  /** The acknowledgements come as `result_acks` frames (asked for with RESULT_ACK_BATCHES_HEADER). */
  result_ack_batches: z.boolean().optional(),
});
export type StreamReadyFrame = z.infer<typeof StreamReadyFrame>;

/** Server → client: one message; its body is always base64 here, so bytes survive exactly. */
export const StreamMessageFrame = z.object({
  type: z.literal('message'),
  /** Set on a message pushed again by a replay: not a step of the stream's cursor. */
  replay: z.literal(true).optional(),
  message: CliMessageOut,
});
export type StreamMessageFrame = z.infer<typeof StreamMessageFrame>;

/**
 * Server → client, only when a filter is set: every message up to and including `cursor` has been
 * considered, and none after the last message frame matched. Sent after a run of skipped messages
 * (at the end of the catch-up, and at most about once a second while live messages are skipped).
 */
export const StreamCursorFrame = z.object({ type: z.literal('cursor'), cursor: Uuid });
export type StreamCursorFrame = z.infer<typeof StreamCursorFrame>;

/** Client → server: the local app's answer, as InboundResultIn. */
export const StreamResultFrame = z.strictObject({ type: z.literal('result'), ...resultShape, ...answerShape, ...resultIdShape });
export type StreamResultFrame = z.infer<typeof StreamResultFrame>;

/**
 * What became of an acknowledged report: `recorded`; `duplicate`, its `result_id` was recorded
 * before (nothing changed); `not_found`, no live message of the stream's endpoint has its id;
 * `refused`, the frame is not a valid result (`message` says why). None of them changes if the
 * report is sent again.
 */
export const RESULT_ACK_OUTCOMES = ['recorded', 'duplicate', 'not_found', 'refused'] as const;
export type ResultAckOutcome = (typeof RESULT_ACK_OUTCOMES)[number];

/**
 * Server → client: the report `result_id` is settled, sent after the commit that holds it. A report
 * without an acknowledgement (the connection or the server went away first) may or may not have
 * been recorded: the client sends it again, under the same id.
 */
export const StreamResultAckFrame = z.object({
  type: z.literal('result_ack'),
  result_id: Uuid,
  outcome: z.enum(RESULT_ACK_OUTCOMES),
  message: z.string().optional(),
});
export type StreamResultAckFrame = z.infer<typeof StreamResultAckFrame>;

/**
 * The upgrade's request header by which a client asks for its acknowledgements in batches, with the
 * value `batch`: one `result_acks` frame for the reports one commit settled, instead of a
 * `result_ack` frame each. A server that predates it ignores the header and acknowledges one by one.
 */
export const RESULT_ACK_BATCHES_HEADER = 'hookrelay-result-acks';
export const RESULT_ACK_BATCHES_VALUE = 'batch';
/** Most acknowledgements one `result_acks` frame carries. */
export const RESULT_ACKS_MAX = 1000;

/** Server → client, to a client that asked for batches: the reports settled together, in the order they were. */
export const StreamResultAcksFrame = z.object({
  type: z.literal('result_acks'),
  acks: z.array(StreamResultAckFrame.omit({ type: true })).min(1).max(RESULT_ACKS_MAX),
});
export type StreamResultAcksFrame = z.infer<typeof StreamResultAcksFrame>;

export const StreamServerFrame = z.discriminatedUnion('type', [StreamReadyFrame, StreamMessageFrame, StreamCursorFrame, StreamResultAckFrame, StreamResultAcksFrame, RejectionFrame]);
export type StreamServerFrame = z.infer<typeof StreamServerFrame>;

/** Any frame of the stream, in either direction (JSON text frames). */
export const StreamFrame = z.discriminatedUnion('type', [StreamReadyFrame, StreamMessageFrame, StreamCursorFrame, StreamResultAckFrame, StreamResultAcksFrame, RejectionFrame, StreamResultFrame]);
export type StreamFrame = z.infer<typeof StreamFrame>;
