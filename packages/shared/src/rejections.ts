/**
 * The constants of refused requests (docs/api.md, Refused requests), without zod, so that the
 * inspector's bundle can read them; the schemas are in schemas/rejections.ts.
 */

/**
 * Why a request at an ingest URL was refused (docs/api.md, Refused requests). A closed set: a client
 * may switch on it.
 */
export const REJECTION_REASONS = [
  'signature_missing',
  'signature_malformed',
  'signature_mismatch',
  'timestamp_missing',
  'timestamp_malformed',
  'timestamp_out_of_tolerance',
  'token_missing',
  'token_mismatch',
  'ip_not_allowed',
  'verification_misconfigured',
  'body_too_large',
  'endpoint_paused',
  'method_not_allowed',
] as const;
/** Most refused requests kept per endpoint; older ones are removed as new ones are stored. */
export const REJECTIONS_KEPT_PER_ENDPOINT = 1000;
/** Most bytes of a refused request's body that are kept. */
export const REJECTION_BODY_PREFIX_BYTES = 64 * 1024;
/** The text that replaces a redacted header value. */
export const REDACTED_HEADER_VALUE = '[redacted]';
