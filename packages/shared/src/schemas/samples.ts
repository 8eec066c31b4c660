import { z } from 'zod';
import { isSampleEvent, SAMPLE_EVENTS, SAMPLE_PROVIDERS, sampleEditPathProblem, type SampleProvider } from '../samples.js';
import { Uuid } from './common.js';

export const SampleProviderName = z.enum(SAMPLE_PROVIDERS, { message: `must be one of ${SAMPLE_PROVIDERS.join(', ')}` });

/** A sub-path as an ingest URL carries it: `/` then URL path characters (percent-escapes included). */
const SUB_PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/u;

/**
 * Edits of a JSON body, in order (`--set a.b=value`): a sample's, and an edited replay's
 * (POST /v1/inbound-messages/{id}/replay). A path may not name an object's prototype machinery
 * (`sampleEditPathProblem`).
 */
export const SampleEdits = z
  .array(
    z.strictObject({
      path: z
        .string({ message: 'must be a string' })
        .min(1, 'must not be empty')
        .max(200, 'must be at most 200 characters')
        .superRefine((path, ctx) => {
          const problem = sampleEditPathProblem(path);
          if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
        }),
      value: z.union([z.string().max(10_000, 'must be at most 10000 characters'), z.number(), z.boolean(), z.null()], {
        message: 'must be a string, number, boolean or null',
      }),
    }),
  )
  .max(50, 'must hold at most 50 edits');

/**
 * POST /v1/inbound-endpoints/{id}/samples: the server builds the sample (as `hookrelay trigger`
 * does), signs it with the endpoint's stored HMAC secret and ingests it at the endpoint's URL.
 */
export const InboundSampleIn = z
  .strictObject({
    provider: SampleProviderName,
    event: z.string({ message: 'must be a string' }).min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
    /** Sub-path after the ingest URL, e.g. `/github` for a listener's path route. */
    path: z.string({ message: 'must be a string' }).max(1000, 'must be at most 1000 characters').regex(SUB_PATH, 'must start with / and hold only URL path characters').optional(),
    /** Edits of the body, in order (`--set a.b=value`). */
    set: SampleEdits.optional(),
  })
  .superRefine((value, ctx) => {
    if (!isSampleEvent(value.provider as SampleProvider, value.event)) {
      ctx.addIssue({ code: 'custom', path: ['event'], message: `must be one of ${SAMPLE_EVENTS[value.provider as SampleProvider].join(', ')} for ${value.provider}` });
    }
  });
export type InboundSampleIn = z.infer<typeof InboundSampleIn>;

/** What the ingest made of the sample. The secret and the signature are never returned. */
export const InboundSampleOut = z.object({
  inbound_endpoint_id: Uuid,
  provider: SampleProviderName,
  event: z.string(),
  path: z.string(),
  /** null when the endpoint answers ingests with 204/205 (no body). */
  message_id: Uuid.nullable(),
  /** The status the ingest answered, as the provider would have seen it. */
  ingest_status: z.number().int(),
  /** The endpoint's idempotency headers matched an earlier message: nothing new was stored. */
  duplicate: z.boolean(),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  /**
   * Whether the sample carried the provider's signature. False only for an endpoint that verifies
   * nothing and holds no HMAC secret of the provider's scheme.
   */
  signed: z.boolean(),
});
export type InboundSampleOut = z.infer<typeof InboundSampleOut>;
