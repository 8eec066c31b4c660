import { sha256Hex } from './digest.js';
import { successEnvelope } from './envelope.js';
import { InboundIngestOut } from './schemas/ingest.js';
import type { SampleProvider, SampleRequest } from './samples.js';
import type { InboundSampleOut } from './schemas/samples.js';

const IngestAnswer = successEnvelope(InboundIngestOut);

/** What the ingest URL answered to a sample. */
export interface SampleIngestAnswer {
  status: number;
  /** The `hookrelay-duplicate` header (INGEST_DUPLICATE_HEADER) was `true`. */
  duplicate: boolean;
  /** The answer's body (the envelope with `message_id`, or empty for 204/205). */
  text: string;
}

/** The outcome of a sample as the samples route and `hookrelay trigger` report it. */
export function sampleOutcome(
  endpointId: string,
  provider: SampleProvider,
  event: string,
  path: string,
  sample: SampleRequest,
  answer: SampleIngestAnswer,
  signed: boolean,
): InboundSampleOut {
  let messageId: string | null = null;
  try {
    const parsed = IngestAnswer.safeParse(JSON.parse(answer.text));
    if (parsed.success) messageId = parsed.data.data.message_id;
  } catch {
    // 204/205, or an endpoint's own answer: no id to show.
  }
  return {
    inbound_endpoint_id: endpointId,
    provider,
    event,
    path,
    message_id: messageId,
    ingest_status: answer.status,
    duplicate: answer.duplicate,
    size_bytes: sample.body.length,
    payload_sha256: sha256Hex(sample.body),
    signed,
  };
}
